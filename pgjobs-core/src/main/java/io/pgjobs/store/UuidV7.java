package io.pgjobs.store;

import java.security.SecureRandom;
import java.time.Instant;
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

  /** The largest millisecond a UUIDv7 holds: 48 bits. */
  static final long MAX_MILLIS = (1L << 48) - 1;

  /**
   * The time a UUIDv7 holds (its first 48 bits, Unix milliseconds): when {@link #generate} made it.
   * Meaningless for an id of another version.
   */
  public static Instant timeOf(UUID id) {
    return Instant.ofEpochMilli(id.getMostSignificantBits() >>> 16);
  }

  /**
   * The smallest UUID of the millisecond {@code millis} (clamped to 0 and {@link #MAX_MILLIS}): every
   * UUIDv7 of that millisecond or later sorts at or above it, every one of an earlier millisecond below
   * it, as PostgreSQL orders uuids (their bytes, unsigned).
   */
  public static UUID floorOf(long millis) {
    long clamped = Math.max(0, Math.min(MAX_MILLIS, millis));
    return new UUID(clamped << 16, 0L);
  }

  /**
   * The bound on ids of jobs created before {@code t}, to the millisecond: an id is less than it exactly
   * when its millisecond is before {@code t}'s. Ids hold no finer time, so a job of {@code t}'s own
   * millisecond is neither before nor after {@code t} ({@link #after}).
   */
  public static UUID before(Instant t) {
    return floorOf(millisFloor(t));
  }

  /**
   * The bound on ids of jobs created after {@code t}, to the millisecond: an id is greater than or equal
   * to it exactly when its millisecond is after {@code t}'s.
   */
  public static UUID after(Instant t) {
    return floorOf(millisFloor(t) + 1);
  }

  /** {@code t} in Unix milliseconds, rounded down, saturating far outside what a UUIDv7 holds. */
  private static long millisFloor(Instant t) {
    long seconds = t.getEpochSecond();
    if (seconds > MAX_MILLIS / 1000 + 1) {
      return MAX_MILLIS + 1;
    }
    if (seconds < -1) {
      return -1;
    }
    return seconds * 1000 + t.getNano() / 1_000_000; // nanos are never negative: this rounds down
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
