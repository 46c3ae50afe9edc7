package io.pgjobs.bench;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Base64;
import java.util.zip.DataFormatException;
import org.HdrHistogram.Histogram;

/**
 * W5's latency histograms (HdrHistogram, microseconds, 1 µs to 1 hour at 3 significant digits: a few
 * tens of KiB each, whatever the rate or the run's length) and how they cross the process boundary: a
 * window's interval histogram travels as one line of compressed, Base64-encoded bytes.
 */
final class W5Histograms {
  /** The largest value a histogram tracks: one hour in µs; larger values are clamped to it. */
  static final long MAX_MICROS = 3_600_000_000L;

  private W5Histograms() {}

  static Histogram empty() {
    return new Histogram(MAX_MICROS, 3);
  }

  /** Records {@code micros}, clamped into [0, {@link #MAX_MICROS}]. */
  static void record(org.HdrHistogram.Recorder recorder, long micros) {
    recorder.recordValue(Math.max(0, Math.min(MAX_MICROS, micros)));
  }

  static String encode(Histogram h) {
    ByteBuffer buffer = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
    int length = h.encodeIntoCompressedByteBuffer(buffer);
    return Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buffer.array(), length));
  }

  static Histogram decode(String text) {
    try {
      return Histogram.decodeFromCompressedByteBuffer(
          ByteBuffer.wrap(Base64.getDecoder().decode(text)), 0);
    } catch (DataFormatException e) {
      throw new IllegalStateException("a W5 histogram could not be decoded: " + e.getMessage(), e);
    }
  }

  /** The wall clock in µs since the epoch (the same clock in every process of this machine). */
  static long epochMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  /** Percentile {@code p} in ms, or null when the histogram is empty. */
  static Double ms(Histogram h, double p) {
    return h.getTotalCount() == 0 ? null : h.getValueAtPercentile(p) / 1000.0;
  }
}
