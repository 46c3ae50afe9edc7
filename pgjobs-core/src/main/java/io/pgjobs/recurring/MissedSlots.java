package io.pgjobs.recurring;

/**
 * What happens to the slots of a recurring schedule that were missed: slots older than the
 * {@code recurringMissedAfter} of maintenance (by default the time a leader change may take, 22 s) when
 * they are looked at, because nothing fired them (every worker was stopped, the schedule was paused).
 * While no slot is missed, every due slot fires.
 *
 * @param policy {@code skip}, {@code latest} or {@code catch_up}
 * @param catchUp with {@code catch_up}: how many of the newest missed slots still fire (1 to 1000)
 */
public record MissedSlots(String policy, int catchUp) {
  /** Missed slots are skipped: the schedule goes on with the next slot. */
  public static final MissedSlots SKIP = new MissedSlots("skip", 1);
  /**
   * After a gap, only the latest due slot fires, once (the newest missed slot, or a newer one that is on
   * time); every slot before it is skipped. The default.
   */
  public static final MissedSlots LATEST = new MissedSlots("latest", 1);

  /** Validates. */
  public MissedSlots {
    if (!policy.equals("skip") && !policy.equals("latest") && !policy.equals("catch_up")) {
      throw new IllegalArgumentException(
          "missed slots policy must be skip, latest or catch_up, was '" + policy + "'");
    }
    if (catchUp < 1 || catchUp > 1000) {
      throw new IllegalArgumentException("catch-up must be between 1 and 1000, was " + catchUp);
    }
  }

  /** The newest {@code n} missed slots fire; older ones are skipped. */
  public static MissedSlots catchUp(int n) {
    return new MissedSlots("catch_up", n);
  }

  /** True for {@code latest}: after a gap, only the latest due slot fires. */
  boolean latestOnly() {
    return policy.equals("latest");
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
