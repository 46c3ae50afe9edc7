package io.pgjobs.recurring;

import io.pgjobs.JobType;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A recurring job: every slot of a cron schedule enqueues one job of a type with a fixed payload, exactly
 * once across any number of nodes and leader changes.
 *
 * <pre>{@code
 * JobWorker.builder(dataSource)
 *     .register(REPORT, reportHandler)
 *     .recurring(Recurring.of("nightly-report", "0 3 * * *", "Europe/Berlin", REPORT, new Report("daily")))
 *     .build();
 * }</pre>
 *
 * @param name the schedule's stable name (1 to 200 of letters, digits and {@code _ . : - /})
 * @param schedule the cron expression and its zone
 * @param jobType the type's name
 * @param queue the queue each job goes to
 * @param payloadJson the payload of each job, as JSON
 * @param priority each job's priority
 * @param maxAttempts each job's max attempts
 * @param missed what happens to slots missed while nothing ran
 */
public record Recurring(
    String name,
    CronSchedule schedule,
    String jobType,
    String queue,
    String payloadJson,
    int priority,
    int maxAttempts,
    MissedSlots missed) {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,200}");

  /** Validates the fields. */
  public Recurring {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("invalid recurring schedule name '" + name
          + "'; allowed: 1 to 200 of letters, digits and _ . : - /");
    }
    Objects.requireNonNull(schedule, "schedule");
    Objects.requireNonNull(jobType, "jobType");
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(payloadJson, "payloadJson");
    Objects.requireNonNull(missed, "missed");
    if (maxAttempts < 1) {
      throw new IllegalArgumentException(
          "max attempts of recurring schedule '" + name + "' must be at least 1");
    }
  }

  /**
   * A schedule of {@code type} with {@code payload}, using the type's queue, priority and max attempts;
   * missed slots: {@link MissedSlots#LATEST}.
   *
   * @param cron see {@link CronSchedule}
   * @param zone an IANA zone, e.g. {@code Europe/Berlin} or {@code UTC}
   */
  public static <P> Recurring of(
      String name, String cron, String zone, JobType<P> type, P payload) {
    return new Recurring(
        name,
        CronSchedule.parse(cron, zone),
        type.name(),
        type.queue(),
        io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER.writeValueAsString(payload),
        type.priority(),
        type.maxAttempts(),
        MissedSlots.LATEST);
  }

  /** The same schedule with another policy for missed slots. */
  public Recurring withMissed(MissedSlots missed) {
    return new Recurring(
        name, schedule, jobType, queue, payloadJson, priority, maxAttempts, missed);
  }

  /** The idempotency key of one slot's job: the same for every node that fires it. */
  public static String slotKey(String name, java.time.Instant slot) {
    return "recurring:" + name + ":" + slot;
  }

  /** The context of one slot's job: schedule and slot, visible in the job and matched by text filters. */
  public static String slotContext(String name, java.time.Instant slot) {
    return "recurring " + name + " @ " + slot;
  }
}
