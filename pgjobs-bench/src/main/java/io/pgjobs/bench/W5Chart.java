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
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * Draws one W5 run as a PNG with Java2D, as {@link SweepChart} does: the largest queue depth of each window (top, linear) and pickup
 * p99 and p50 (bottom, log scale) per window against the time since the run's start, the phases shaded
 * (idle-transaction phases in red) and named.
 */
public final class W5Chart {
  static final int WIDTH = 1000;
  static final int HEIGHT = 640;
  private static final int LEFT = 90;
  private static final int RIGHT = 30;
  private static final int TOP = 60;
  private static final int GAP = 50;
  private static final int BOTTOM = 50;
  private static final Color[] DEPTHS = {
    new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x17becf)
  };
  private static final Color[] P99S = {new Color(0xd62728), new Color(0x9467bd), new Color(0x8c564b)
  };
  private static final Color P50 = new Color(0x2ca02c);

  private W5Chart() {}

  /** The file of {@code run} for {@code --chart base.png}: {@code base-<run>.png}, e.g. {@code w5-800s.png}. */
  public static Path fileFor(Path base, W5Run run, boolean severalRepeats) {
    String name = base.getFileName().toString();
    String stem = name.toLowerCase(Locale.ROOT).endsWith(".png")
        ? name.substring(0, name.length() - 4)
        : name;
    String tag = run.run().toLowerCase(Locale.ROOT).replace("/", "").replaceAll("[^a-z0-9]+", "-");
    String file = stem + "-" + tag + (severalRepeats ? "-run" + run.repeat() : "") + ".png";
    return base.getParent() == null ? Path.of(file) : base.getParent().resolve(file);
  }

  /** One line of a chart: a run under a name (e.g. {@code before}, {@code after}). */
  public record Series(String name, W5Run run) {}

  /**
   * Charts from {@code --out} files, overlaid: for each run of the first file (its first repeat), one PNG
   * at {@link #fileFor} with that run from every file that has it, named after the file (its name without
   * {@code .jsonl}). Returns the files written.
   */
  public static List<Path> fromJsonLines(List<Path> files, Path base) throws IOException {
    java.util.Map<String, List<Series>> byRun = new java.util.LinkedHashMap<>();
    for (Path file : files) {
      String name = file.getFileName().toString().replaceFirst("\\.jsonl?$", "");
      for (W5Run r : W5Run.readJsonLines(file)) {
        if (r.repeat() == 1) {
          byRun.computeIfAbsent(r.run(), k -> new ArrayList<>()).add(new Series(name, r));
        }
      }
    }
    if (byRun.isEmpty()) {
      throw new IllegalArgumentException("no W5 windows in " + files);
    }
    List<Path> written = new ArrayList<>();
    for (List<Series> series : byRun.values()) {
      Path target = fileFor(base, series.getFirst().run(), false);
      write(series, target);
      written.add(target);
    }
    return written;
  }

  /** Writes the chart of {@code run} to {@code target}. */
  public static void write(W5Run run, Path target) throws IOException {
    write(List.of(new Series("", run)), target);
  }

  /**
   * Writes the chart of one or more runs of the same kind to {@code target}, overlaid (before and after a
   * change): the phases shaded are the first run's; with several, p50 is left out and each run's depth and
   * p99 lines carry its name.
   */
  public static void write(List<Series> series, Path target) throws IOException {
    W5Run run = series.getFirst().run();
    List<W5Run.Window> windows = run.windows();
    List<W5Run.Window> all =
        series.stream().flatMap(x -> x.run().windows().stream()).toList();
    double maxT = all.stream().mapToDouble(W5Run.Window::endS).max().orElse(1);
    long maxDepth =
        Math.max(1, all.stream().mapToLong(W5Run.Window::depthMax).max().orElse(1));
    double depthTop = niceCeiling(Math.max(10, maxDepth));
    double maxMs = all.stream()
        .map(W5Run.Window::p99Ms)
        .filter(v -> v != null)
        .mapToDouble(Double::doubleValue)
        .max()
        .orElse(1);
    double minMs = all.stream()
        .map(W5Run.Window::p50Ms)
        .filter(v -> v != null && v > 0)
        .mapToDouble(Double::doubleValue)
        .min()
        .orElse(0.1);
    double logLo = Math.floor(Math.log10(Math.max(0.01, Math.min(minMs, 1))));
    double logHi = Math.max(logLo + 1, Math.ceil(Math.log10(Math.max(maxMs, 1))));

    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, HEIGHT);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    g.setColor(Color.DARK_GRAY);
    String title = run.rate() > 0
        ? String.format(
            Locale.ROOT,
            "W5 sustained load: %,d jobs/s offered, %d lanes, %.3g ms jobs",
            run.rate(),
            run.lanes(),
            run.workMs())
        : String.format(
            Locale.ROOT,
            "W5 peak probe: depth kept at %,d, %d lanes, %.3g ms jobs",
            run.peakDepth(),
            run.lanes(),
            run.workMs());
    if (run.globalConcurrency() > 0) {
      // Short: the title is one line of a 1,000-pixel image.
      title += String.format(Locale.ROOT, ", global limit %,d", run.globalConcurrency());
    }
    if (run.partitions() > 0) {
      title += String.format(
          Locale.ROOT,
          ", limits: %,d partitions × %d",
          run.partitions(),
          run.partitionConcurrency());
    }
    g.drawString(title, LEFT, 26);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int plotW = WIDTH - LEFT - RIGHT;
    int panelH = (HEIGHT - TOP - GAP - BOTTOM) / 2;
    int depthY = TOP;
    int latY = TOP + panelH + GAP;

    // Phases: shaded bands over both panels, named at the top.
    double phaseStart = 0;
    List<double[]> bands = new ArrayList<>();
    List<String> names = new ArrayList<>();
    List<Boolean> idle = new ArrayList<>();
    String current = null;
    for (W5Run.Window w : windows) {
      if (!w.phase().equals(current)) {
        if (current != null) {
          bands.add(new double[] {phaseStart, w.endS() - w.seconds()});
        }
        current = w.phase();
        phaseStart = w.endS() - w.seconds();
        names.add(w.phase());
        idle.add(w.idleTransaction());
      }
    }
    if (current != null) {
      bands.add(new double[] {phaseStart, maxT});
    }
    for (int i = 0; i < bands.size(); i++) {
      int x0 = x(bands.get(i)[0], maxT, plotW);
      int x1 = x(bands.get(i)[1], maxT, plotW);
      g.setColor(
          idle.get(i) ? new Color(0xfbe3e3) : (i % 2 == 0 ? new Color(0xf4f4f4) : Color.WHITE));
      g.fillRect(x0, depthY, x1 - x0, panelH);
      g.fillRect(x0, latY, x1 - x0, panelH);
      g.setColor(idle.get(i) ? new Color(0xa02020) : Color.DARK_GRAY);
      String label = names.get(i) + (idle.get(i) ? " (idle transaction open)" : "");
      if (g.getFontMetrics().stringWidth(label) > x1 - x0 - 4) {
        label = names.get(i);
      }
      g.drawString(label, x0 + 4, depthY - 6);
    }

    // Depth panel.
    for (int i = 0; i <= 5; i++) {
      int y = depthY + panelH - panelH * i / 5;
      g.setColor(new Color(0xdddddd));
      g.drawLine(LEFT, y, LEFT + plotW, y);
      g.setColor(Color.DARK_GRAY);
      String label = String.format(Locale.ROOT, "%,.0f", depthTop * i / 5);
      g.drawString(label, LEFT - 8 - g.getFontMetrics().stringWidth(label), y + 4);
    }
    g.drawString(
        "depth (jobs offered, not started; largest of each window)", LEFT + 6, depthY + 14);
    g.setStroke(new BasicStroke(2f));
    int px;
    int py = -1;
    for (int k = 0; k < series.size(); k++) {
      g.setColor(DEPTHS[k % DEPTHS.length]);
      px = -1;
      for (W5Run.Window w : series.get(k).run().windows()) {
        int cx = x(w.endS(), maxT, plotW);
        int cy = depthY + panelH - (int) Math.round(panelH * w.depthMax() / depthTop);
        if (px >= 0) {
          g.drawLine(px, py, cx, cy);
        }
        px = cx;
        py = cy;
      }
      if (series.size() > 1) {
        g.fillRect(LEFT + plotW - 150, depthY + 8 + k * 16, 14, 8);
        g.drawString(series.get(k).name(), LEFT + plotW - 130, depthY + 16 + k * 16);
      }
    }

    // Latency panel, log scale.
    g.setStroke(new BasicStroke(1f));
    for (double e = logLo; e <= logHi; e++) {
      int y = latY + panelH - (int) Math.round(panelH * (e - logLo) / (logHi - logLo));
      g.setColor(new Color(0xdddddd));
      g.drawLine(LEFT, y, LEFT + plotW, y);
      g.setColor(Color.DARK_GRAY);
      double v = Math.pow(10, e);
      String label = v >= 1
          ? String.format(Locale.ROOT, "%,.0f ms", v)
          : String.format(Locale.ROOT, "%s ms", v);
      g.drawString(label, LEFT - 8 - g.getFontMetrics().stringWidth(label), y + 4);
    }
    g.setColor(Color.DARK_GRAY);
    String legend = "pickup latency per window (log scale): ";
    g.drawString(legend, LEFT + 6, latY + 14);
    int lx = LEFT + 6 + g.getFontMetrics().stringWidth(legend);
    boolean several = series.size() > 1;
    for (int k = 0; k < series.size(); k++) {
      Color p99Color = P99S[k % P99S.length];
      g.setColor(p99Color);
      String name = several ? "p99 " + series.get(k).name() : "p99";
      g.drawString(name, lx, latY + 14);
      lx += g.getFontMetrics().stringWidth(name + "   ");
    }
    if (!several) {
      g.setColor(P50);
      g.drawString("p50", lx, latY + 14);
    }
    for (int k = 0; k < series.size(); k++) {
      for (boolean p99 : several ? new boolean[] {true} : new boolean[] {false, true}) {
        g.setColor(p99 ? P99S[k % P99S.length] : P50);
        g.setStroke(new BasicStroke(p99 ? 2f : 1.5f));
        px = -1;
        for (W5Run.Window w : series.get(k).run().windows()) {
          Double v = p99 ? w.p99Ms() : w.p50Ms();
          if (v == null) {
            px = -1;
            continue;
          }
          double lv = Math.max(logLo, Math.min(logHi, Math.log10(Math.max(v, 1e-3))));
          int cx = x(w.endS(), maxT, plotW);
          int cy = latY + panelH - (int) Math.round(panelH * (lv - logLo) / (logHi - logLo));
          if (px >= 0) {
            g.drawLine(px, py, cx, cy);
          }
          g.fillOval(cx - 2, cy - 2, 5, 5);
          px = cx;
          py = cy;
        }
      }
    }

    // Time axis and frames.
    g.setStroke(new BasicStroke(1f));
    g.setColor(Color.GRAY);
    g.drawRect(LEFT, depthY, plotW, panelH);
    g.drawRect(LEFT, latY, plotW, panelH);
    g.setColor(Color.DARK_GRAY);
    double step = niceCeiling(maxT / 8);
    for (double t = 0; t <= maxT + 1e-9; t += step) {
      int cx = x(t, maxT, plotW);
      String label = String.format(Locale.ROOT, step >= 1 ? "%.0f" : "%.1f", t);
      g.drawString(label, cx - g.getFontMetrics().stringWidth(label) / 2, latY + panelH + 16);
    }
    g.drawString("seconds since the start of the run", LEFT + plotW / 2 - 90, latY + panelH + 36);
    g.dispose();
    if (target.getParent() != null) {
      Files.createDirectories(target.getParent());
    }
    ImageIO.write(image, "png", target.toFile());
  }

  private static int x(double t, double maxT, int plotW) {
    return LEFT + (int) Math.round(plotW * t / Math.max(1e-9, maxT));
  }

  private static double niceCeiling(double value) {
    if (value <= 0) {
      return 1;
    }
    double magnitude = Math.pow(10, Math.floor(Math.log10(value)));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= value) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }
}
