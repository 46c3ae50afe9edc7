package io.pgjobs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Peak resident memory of this process or another one, from Linux's /proc (zero elsewhere). */
final class Memory {
  private Memory() {}

  /** Resets the peak (Linux: writing 5 to clear_refs resets VmHWM). */
  static void resetPeak() {
    try {
      Files.writeString(Path.of("/proc/self/clear_refs"), "5");
    } catch (IOException | RuntimeException e) {
      // Not Linux, or not permitted: the peak then covers the whole process life.
    }
  }

  /** VmHWM of this process in MiB. */
  static double peakMib() {
    return peakMib(Path.of("/proc/self/status"));
  }

  /** VmHWM of process {@code pid} in MiB (read it before the process exits). */
  static double peakMib(long pid) {
    return peakMib(Path.of("/proc", Long.toString(pid), "status"));
  }

  private static double peakMib(Path status) {
    try {
      for (String line : Files.readAllLines(status)) {
        if (line.startsWith("VmHWM:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
        }
      }
    } catch (IOException | RuntimeException e) {
      return 0;
    }
    return 0;
  }
}
