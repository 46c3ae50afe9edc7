package io.pgjobs;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Defaults of a job type, declared on its <em>payload class</em> so that both the code that enqueues and
 * the worker that runs see the same values. {@link JobType#of(Class)} reads it.
 *
 * <pre>{@code
 * @JobDefaults(name = "send_email", queue = "emails", priority = Priority.HIGH, maxAttempts = 5,
 *     timeout = "30s", retry = @JobDefaults.Retry(backoff = Backoff.EXPONENTIAL, base = "2s", cap = "5m"))
 * public record SendEmail(String to, String subject, String body) {}
 * }</pre>
 *
 * Attributes left at their sentinel value fall back to the pgjobs defaults.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface JobDefaults {
  /** The job type's name; empty means it must be given to {@link JobType#of(String, Class)}. */
  String name() default "";

  /** Queue; empty means {@code default}. */
  String queue() default "";

  /** Priority; {@link Integer#MIN_VALUE} means {@link Priority#NORMAL}. */
  int priority() default Integer.MIN_VALUE;

  /** Maximum attempts; 0 means 3. */
  int maxAttempts() default 0;

  /** Timeout of one attempt ({@code 30s}, {@code 5m}, {@code 1h}); empty means 1 h. */
  String timeout() default "";

  /**
   * The payload field (or JSON pointer, {@code /input/payment_id}) every job of this type takes its
   * idempotency key from; empty means none (see {@link JobType#withIdempotencyKeyFrom}).
   */
  String idempotencyKey() default "";

  /**
   * The capability a worker must declare to run jobs of this type ({@code media}); empty means none:
   * any worker of the queue runs them (see {@link JobType#withCapability}).
   */
  String capability() default "";

  /** Retry policy; the default is exponential, base 1 s, cap 10 min, 10 % jitter. */
  Retry retry() default @Retry;

  /**
   * Makes every job of the type unique ({@link JobType#withUnique}); the default ({@code enabled = false})
   * means not unique. Example: {@code unique = @JobDefaults.Unique(enabled = true, byArgs = {"customer_id"},
   * period = "1h")}.
   */
  Unique unique() default @Unique;

  /** A uniqueness rule ({@link UniqueOptions}) written as an annotation. */
  @Documented
  @Retention(RetentionPolicy.RUNTIME)
  @Target({})
  @interface Unique {
    /** True to make the type's jobs unique. */
    boolean enabled() default false;

    /** The payload fields (names or JSON pointers) of the key; {@code {"*"}} for the whole payload; empty for none. */
    String[] byArgs() default {};

    /** The queue is part of the key. */
    boolean byQueue() default false;

    /** Period ({@code 30s}, {@code 10m}, {@code 1h}); empty for none. */
    String period() default "";

    /** What a duplicate replaces in the waiting job. */
    UniqueOptions.Replace[] replace() default {};

    /**
     * The states in which an existing job counts ({@link UniqueOptions.Builder#states}); empty for the
     * unfinished ones.
     */
    JobState[] states() default {};
  }

  /** The backoff strategies of {@link RetryPolicy}. */
  enum Backoff {
    /** {@link RetryPolicy#fixed}. */
    FIXED,
    /** {@link RetryPolicy#linear}. */
    LINEAR,
    /** {@link RetryPolicy#exponential}. */
    EXPONENTIAL,
    /** {@link RetryPolicy#decorrelatedJitter}. */
    DECORRELATED_JITTER
  }

  /** A retry policy written as an annotation. */
  @Documented
  @Retention(RetentionPolicy.RUNTIME)
  @Target({})
  @interface Retry {
    /** Strategy. */
    Backoff backoff() default Backoff.EXPONENTIAL;

    /** First delay (the only one for {@code FIXED}). */
    String base() default "1s";

    /** Longest delay. */
    String cap() default "10m";

    /** For {@code EXPONENTIAL}: the largest share (0 to 1) taken off each delay at random. */
    double jitter() default 0.1;
  }
}
