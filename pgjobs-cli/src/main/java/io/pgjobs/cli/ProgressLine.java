package io.pgjobs.cli;

import java.io.PrintWriter;

/**
 * Progress of a long operation on one line: redrawn in place on a terminal, otherwise a new line at
 * each tenth of the way (so logs and captured output stay short).
 */
final class ProgressLine {
  private final PrintWriter out;
  private final String verb;
  private final long total;
  private final boolean interactive;
  private long lastTenth = 0;
  private final long started = System.nanoTime();

  ProgressLine(PrintWriter out, String verb, long total, boolean interactive) {
    this.out = out;
    this.verb = verb;
    this.total = total;
    this.interactive = interactive;
  }

  /** {@code done} of the total are done. */
  void update(long done) {
    long percent = total == 0 ? 100 : done * 100 / total;
    String line = verb + " " + done + " of " + total + " (" + percent + "%)" + rate(done);
    if (interactive) {
      out.print("\r" + line);
      out.flush();
    } else if (percent / 10 > lastTenth || done == total) {
      lastTenth = percent / 10;
      out.println(line);
      out.flush();
    }
  }

  /** Ends the line (on a terminal). */
  void finish() {
    if (interactive) {
      out.println();
      out.flush();
    }
  }

  private String rate(long done) {
    double seconds = (System.nanoTime() - started) / 1e9;
    return seconds < 0.5 ? "" : String.format(java.util.Locale.ROOT, ", %.0f/s", done / seconds);
  }
}
