package io.pgjobs.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.imageio.ImageIO;

/**
 * Draws the W3 sweep as a PNG with Java2D: jobs/s (linear) against the setting N (log scale), one line
 * per series, the median of each point's runs. No plotting library: a few lines of Graphics2D.
 */
public final class SweepChart {
  private static final int WIDTH = 900;
  private static final int HEIGHT = 520;
  private static final int LEFT = 90;
  private static final int RIGHT = 30;
  private static final int TOP = 50;
  private static final int BOTTOM = 70;
  private static final Color[] COLORS = {
    new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0x9467bd)
  };

  private SweepChart() {}

  /** Writes the chart of {@code results} (sweep points) to {@code target}. */
  public static void write(List<BenchResult> results, Path target) throws IOException {
    Map<String, TreeMap<Integer, List<Double>>> series = new LinkedHashMap<>();
    for (BenchResult r : results) {
      series
          .computeIfAbsent(r.variant(), k -> new TreeMap<>())
          .computeIfAbsent(r.jobs(), k -> new ArrayList<>())
          .add(r.jobsPerS());
    }
    double maxY = 1;
    int minN = Integer.MAX_VALUE;
    int maxN = 1;
    for (TreeMap<Integer, List<Double>> points : series.values()) {
      for (Map.Entry<Integer, List<Double>> p : points.entrySet()) {
        maxY = Math.max(maxY, median(p.getValue()));
        minN = Math.min(minN, p.getKey());
        maxN = Math.max(maxN, p.getKey());
      }
    }
    maxY = niceCeiling(maxY);
    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, HEIGHT);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    g.setColor(Color.DARK_GRAY);
    g.drawString("W3 drain throughput vs claim batch and concurrency (N)", LEFT, 28);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    double logMin = Math.log10(Math.max(1, minN));
    double logMax = Math.log10(Math.max(maxN, minN + 1));
    for (int i = 0; i <= 5; i++) {
      int y = TOP + plotH - plotH * i / 5;
      g.setColor(new Color(0xe6e6e6));
      g.drawLine(LEFT, y, LEFT + plotW, y);
      g.setColor(Color.DARK_GRAY);
      String label = String.format(Locale.ROOT, "%,.0f", maxY * i / 5);
      g.drawString(label, LEFT - 10 - g.getFontMetrics().stringWidth(label), y + 4);
    }
    for (TreeMap<Integer, List<Double>> points : series.values()) {
      for (int n : points.keySet()) {
        int x = LEFT
            + (int) Math.round(plotW * (Math.log10(n) - logMin) / Math.max(1e-9, logMax - logMin));
        g.setColor(new Color(0xe6e6e6));
        g.drawLine(x, TOP, x, TOP + plotH);
        g.setColor(Color.DARK_GRAY);
        String label = Integer.toString(n);
        g.drawString(label, x - g.getFontMetrics().stringWidth(label) / 2, TOP + plotH + 18);
      }
      break;
    }
    g.drawString("N (log scale)", LEFT + plotW / 2 - 30, TOP + plotH + 40);
    g.drawString("jobs/s", 20, TOP - 10);
    g.setColor(Color.GRAY);
    g.drawRect(LEFT, TOP, plotW, plotH);
    int index = 0;
    for (Map.Entry<String, TreeMap<Integer, List<Double>>> s : series.entrySet()) {
      Color color = COLORS[index % COLORS.length];
      g.setColor(color);
      g.setStroke(new BasicStroke(2.5f));
      int prevX = -1;
      int prevY = -1;
      for (Map.Entry<Integer, List<Double>> p : s.getValue().entrySet()) {
        int x = LEFT
            + (int) Math.round(
                plotW * (Math.log10(p.getKey()) - logMin) / Math.max(1e-9, logMax - logMin));
        int y = TOP + plotH - (int) Math.round(plotH * median(p.getValue()) / maxY);
        if (prevX >= 0) {
          g.drawLine(prevX, prevY, x, y);
        }
        g.fillOval(x - 4, y - 4, 8, 8);
        prevX = x;
        prevY = y;
      }
      int legendY = TOP + 18 + index * 18;
      g.fillRect(LEFT + 12, legendY - 9, 14, 10);
      g.setColor(Color.DARK_GRAY);
      g.drawString(s.getKey().replace("sweep: ", ""), LEFT + 32, legendY);
      index++;
    }
    g.dispose();
    if (target.getParent() != null) {
      Files.createDirectories(target.getParent());
    }
    ImageIO.write(image, "png", target.toFile());
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(Double::compare);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static double niceCeiling(double value) {
    double magnitude = Math.pow(10, Math.floor(Math.log10(value)));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= value) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }
}
