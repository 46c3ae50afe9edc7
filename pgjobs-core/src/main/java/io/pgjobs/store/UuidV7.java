package io.pgjobs.store;

import java.security.SecureRandom;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit sequence, then 62 random bits.
 *
 * <p>Time-ordered and, within this process, strictly increasing: ids generated in the same millisecond
 * count up in the 12-bit {@code rand_a} field (RFC 9562 §6.2, method 1), and when 4,096 ids fill a
 * millisecond the clock field moves on by one. So new rows land at the right edge of the primary key
 * index, and "newest first" by id is the order of enqueue. The 62 random bits make ids unguessable, so
 * they can be shown to clients; they come from {@link SecureRandom} in blocks per thread, because one
 * {@code nextBytes} call per id (a global lock and often a system call) is the main cost of a bulk
 * enqueue.
 */
public final class UuidV7 {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int BLOCK_IDS = 512;
  private static final ThreadLocal<RandomBlock> BLOCKS = ThreadLocal.withInitial(RandomBlock::new);
  /** The last (millis << 12 | sequence) handed out. */
  private static final AtomicLong LAST = new AtomicLong();

  private UuidV7() {}

  /** A new id for the current time, greater than every id this process generated before. */
  public static UUID generate() {
    long next;
    long last;
    do {
      last = LAST.get();
      long candidate = System.currentTimeMillis() << 12;
      next = candidate > last ? candidate : last + 1; // same (or an earlier) millisecond: count up
    } while (!LAST.compareAndSet(last, next));
    long millis = next >>> 12;
    long sequence = next & 0xFFFL;
    long msb = (millis << 16) | 0x7000L | sequence;
    long lsb = 0x8000000000000000L | (BLOCKS.get().nextLong() >>> 2);
    return new UUID(msb, lsb);
  }

  /** Random bytes fetched from SecureRandom a block at a time, used by one thread. */
  private static final class RandomBlock {
    private final byte[] bytes = new byte[BLOCK_IDS * 8];
    private int position = bytes.length;

    long nextLong() {
      if (position == bytes.length) {
        RANDOM.nextBytes(bytes);
        position = 0;
      }
      long value = 0;
      for (int i = 0; i < 8; i++) {
        value = (value << 8) | (bytes[position++] & 0xFFL);
      }
      return value;
    }
  }
}
