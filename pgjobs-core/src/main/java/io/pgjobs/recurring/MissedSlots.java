package io.pgjobs.recurring;

/**
 * What happens to the slots of a recurring schedule that were missed: slots older than the
 * {@code missedAfter} of maintenance (default 1 min) when they are looked at, because nothing ran (every
 * worker was stopped) for longer than a leader change takes.
 *
 * @param policy {@code skip}, {@code latest} or {@code catch_up}
 * @param catchUp with {@code catch_up}: how many of the newest missed slots still fire (1 to 1000)
 */
public record MissedSlots(String policy, int catchUp) {
  /** Missed slots are skipped: the schedule goes on with the next slot. */
  public static final MissedSlots SKIP = new MissedSlots("skip", 1);
  /** The most recent missed slot still fires, once; older ones are skipped. The default. */
  public static final MissedSlots LATEST = new MissedSlots("latest", 1);

  /** Validates. */
  public MissedSlots {
    if (!policy.equals("skip") && !policy.equals("latest") && !policy.equals("catch_up")) {
      throw new IllegalArgumentException("missed slots policy must be skip, latest or catch_up, was '" + policy + "'");
    }
    if (catchUp < 1 || catchUp > 1000) {
      throw new IllegalArgumentException("catch-up must be between 1 and 1000, was " + catchUp);
    }
  }

  /** The newest {@code n} missed slots fire; older ones are skipped. */
  public static MissedSlots catchUp(int n) {
    return new MissedSlots("catch_up", n);
  }

  /** How many of the missed slots fire. */
  int firing() {
    return switch (policy) {
      case "skip" -> 0;
      case "latest" -> 1;
      default -> catchUp;
    };
  }
}
