package io.pgjobs.store;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;

/**
 * Writes rows in COPY's text format: tab-separated, newline-terminated, {@code \N} for null, and
 * backslash, tab, newline and carriage return escaped. Used for bulk enqueue, the fastest way to get
 * many rows into PostgreSQL in one round trip.
 */
final class CopyRows {
  private final StringBuilder text = new StringBuilder(1 << 16);
  private boolean rowStarted;
  private Instant lastInstant;
  private String lastInstantText;

  CopyRows uuid(UUID value) {
    return raw(value.toString());
  }

  CopyRows text(String value) {
    separator();
    if (value == null) {
      text.append("\\N");
      return this;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      switch (c) {
        case '\\' -> text.append("\\\\");
        case '\t' -> text.append("\\t");
        case '\n' -> text.append("\\n");
        case '\r' -> text.append("\\r");
        default -> text.append(c);
      }
    }
    return this;
  }

  CopyRows number(Long value) {
    return value == null ? text(null) : raw(Long.toString(value));
  }

  CopyRows number(int value) {
    return raw(Integer.toString(value));
  }

  CopyRows instant(Instant value) {
    if (value == null) {
      return text(null);
    }
    // Most rows of a bulk enqueue share one timestamp (the transaction's now()): format it once.
    if (!value.equals(lastInstant)) {
      lastInstant = value;
      lastInstantText = value.toString();
    }
    return raw(lastInstantText);
  }

  CopyRows endRow() {
    text.append('\n');
    rowStarted = false;
    return this;
  }

  int length() {
    return text.length();
  }

  byte[] drain() {
    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
    text.setLength(0);
    return bytes;
  }

  private CopyRows raw(String value) {
    separator();
    text.append(value);
    return this;
  }

  private void separator() {
    if (rowStarted) {
      text.append('\t');
    }
    rowStarted = true;
  }
}
