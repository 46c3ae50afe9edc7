package io.pgjobs.store;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered, so new rows
 * land at the right edge of the primary key index, and unguessable, so ids can be shown to clients.
 */
public final class UuidV7 {
  private static final SecureRandom RANDOM = new SecureRandom();

  private UuidV7() {}

  /** A new id for the current time. */
  public static UUID generate() {
    byte[] random = new byte[10];
    RANDOM.nextBytes(random);
    long millis = System.currentTimeMillis();
    long msb = (millis << 16) | 0x7000L | ((random[0] & 0x0FL) << 8) | (random[1] & 0xFFL);
    long lsb = 0x8000000000000000L | ((random[2] & 0x3FL) << 56);
    for (int i = 3; i < 10; i++) {
      lsb |= (random[i] & 0xFFL) << (8 * (9 - i));
    }
    return new UUID(msb, lsb);
  }
}
