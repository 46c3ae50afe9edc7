package io.pgjobs;

import java.time.Duration;
import java.time.Instant;

/**
 * Per-job options of an enqueue call; anything left unset comes from the {@link JobType}'s defaults.
 *
 * <pre>{@code
 * EnqueueOptions.builder().priority(Priority.HIGH).delay(Duration.ofMinutes(5))
 *     .idempotencyKey("order-42-receipt").context("checkout").build();
 * }</pre>
 *
 * {@link Builder#build()} validates every field and throws {@link InvalidJobException} naming the field.
 *
 * @param queue queue, or null for the type's
 * @param priority priority, or null for the type's
 * @param maxAttempts at least 1, or null for the type's
 * @param runAt earliest start, or null
 * @param delay earliest start relative to the database's clock, or null (exclusive with {@code runAt})
 * @param context free text for debugging, or null
 * @param idempotencyKey key making the enqueue idempotent, or null
 * @param timeout timeout of each attempt, or null for the type's
 * @param parentId the job whose handler enqueued this one (set by {@code ctx.enqueue}), or null
 * @param unique makes the job unique among jobs in the rule's states ({@link UniqueOptions}), or null for the type's
 * @param capability the capability a worker must declare to run this job, or null for the type's
 * @param partition the job's partition in a partitioned queue ({@link QueueLimits}), or null for the one its
 *     queue's {@code partitionBy} gives it
 */
public record EnqueueOptions(
    String queue,
    Integer priority,
    Integer maxAttempts,
    Instant runAt,
    Duration delay,
    String context,
    String idempotencyKey,
    Duration timeout,
    java.util.UUID parentId,
    UniqueOptions unique,
    String capability,
    String partition) {

  /** The most characters of a partition key: {@value}. */
  public static final int MAX_PARTITION_LENGTH = 255;
  /** The most characters of a context string: {@value}. */
  public static final int MAX_CONTEXT_LENGTH = 10_000;
  /** The most characters of an idempotency key: {@value}. */
  public static final int MAX_IDEMPOTENCY_KEY_LENGTH = 255;
  /** The most attempts a job may have: {@value}. */
  public static final int MAX_MAX_ATTEMPTS = 1_000;

  /** No overrides. */
  public static final EnqueueOptions DEFAULTS =
      new EnqueueOptions(null, null, null, null, null, null, null, null, null, null, null, null);

  /** Validates every field. */
  public EnqueueOptions {
    if (queue != null) {
      JobType.requireName("queue", queue);
    }
    if (maxAttempts != null && (maxAttempts < 1 || maxAttempts > MAX_MAX_ATTEMPTS)) {
      throw new InvalidJobException(
          "maxAttempts", "must be between 1 and " + MAX_MAX_ATTEMPTS + ", was " + maxAttempts);
    }
    if (runAt != null && delay != null) {
      throw new InvalidJobException("runAt", "give either runAt or delay, not both");
    }
    if (delay != null && delay.isNegative()) {
      throw new InvalidJobException("delay", "must be zero or positive, was " + delay);
    }
    if (delay != null && delay.compareTo(RetryPolicy.MAX_DELAY) > 0) {
      throw new InvalidJobException(
          "delay",
          "must be at most " + RetryPolicy.MAX_DELAY.toDays()
              + " days (RetryPolicy.MAX_DELAY), was " + delay);
    }
    if (context != null && context.length() > MAX_CONTEXT_LENGTH) {
      throw new InvalidJobException(
          "context",
          "must be at most " + MAX_CONTEXT_LENGTH + " characters, was " + context.length());
    }
    if (idempotencyKey != null
        && (idempotencyKey.isEmpty() || idempotencyKey.length() > MAX_IDEMPOTENCY_KEY_LENGTH)) {
      throw new InvalidJobException(
          "idempotencyKey",
          "must be 1 to " + MAX_IDEMPOTENCY_KEY_LENGTH + " characters, was "
              + idempotencyKey.length());
    }
    if (timeout != null) {
      JobType.requireTimeout(timeout);
    }
    if (unique != null && idempotencyKey != null) {
      throw new InvalidJobException(
          "unique",
          "give either an idempotency key or unique, not both: an idempotency"
              + " key already makes the enqueue return one job for as long as it is kept");
    }
    if (capability != null) {
      JobType.requireCapability("capability", capability);
    }
    if (partition != null && partition.length() > MAX_PARTITION_LENGTH) {
      throw new InvalidJobException(
          "partition",
          "must be at most " + MAX_PARTITION_LENGTH + " characters, was " + partition.length());
    }
  }

  /** The options without a partition (the components before it existed). */
  public EnqueueOptions(
      String queue,
      Integer priority,
      Integer maxAttempts,
      Instant runAt,
      Duration delay,
      String context,
      String idempotencyKey,
      Duration timeout,
      java.util.UUID parentId,
      UniqueOptions unique,
      String capability) {
    this(
        queue,
        priority,
        maxAttempts,
        runAt,
        delay,
        context,
        idempotencyKey,
        timeout,
        parentId,
        unique,
        capability,
        null);
  }

  /**
   * The options without uniqueness or a capability override (the components before they existed).
   */
  public EnqueueOptions(
      String queue,
      Integer priority,
      Integer maxAttempts,
      Instant runAt,
      Duration delay,
      String context,
      String idempotencyKey,
      Duration timeout,
      java.util.UUID parentId) {
    this(
        queue,
        priority,
        maxAttempts,
        runAt,
        delay,
        context,
        idempotencyKey,
        timeout,
        parentId,
        null,
        null);
  }

  /** A new builder with nothing set. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link EnqueueOptions}. */
  public static final class Builder {
    private String queue;
    private Integer priority;
    private Integer maxAttempts;
    private Instant runAt;
    private Duration delay;
    private String context;
    private String idempotencyKey;
    private Duration timeout;
    private java.util.UUID parentId;
    private UniqueOptions unique;
    private String capability;
    private String partition;

    private Builder() {}

    /**
     * Makes the job unique ({@link UniqueOptions}): while a job with the same key is in one of the rule's
     * states (by default: not finished), this enqueue returns it instead of storing another. Overrides the type's rule ({@link JobType#withUnique});
     * cannot be combined with an idempotency key.
     */
    public Builder unique(UniqueOptions unique) {
      this.unique = unique;
      return this;
    }

    /** The queue (1–255 of letters, digits, {@code _ . : - /}). */
    public Builder queue(String queue) {
      this.queue = queue;
      return this;
    }

    /** The priority, any int; higher runs first. See {@link Priority}. */
    public Builder priority(int priority) {
      this.priority = priority;
      return this;
    }

    /** Most attempts, 1 to {@value EnqueueOptions#MAX_MAX_ATTEMPTS}. */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** Run no earlier than this instant. */
    public Builder runAt(Instant runAt) {
      this.runAt = runAt;
      return this;
    }

    /**
     * Run no earlier than this long after enqueueing (measured by the database's clock); at most
     * {@link RetryPolicy#MAX_DELAY}.
     */
    public Builder delay(Duration delay) {
      this.delay = delay;
      return this;
    }

    /** Free text describing why the job exists, for debugging. */
    public Builder context(String context) {
      this.context = context;
      return this;
    }

    /** Same key, same job: a second enqueue returns the first job (while it is kept) and creates nothing. */
    public Builder idempotencyKey(String idempotencyKey) {
      this.idempotencyKey = idempotencyKey;
      return this;
    }

    /**
     * The capability a worker must declare to run this job ({@code media}), instead of the job type's
     * ({@link JobType#withCapability}). Allowed: 1 to {@value JobType#MAX_CAPABILITY_LENGTH} characters
     * of letters, digits and {@code _ . -}.
     */
    public Builder capability(String capability) {
      this.capability = capability;
      return this;
    }

    /**
     * The job's partition in a partitioned queue ({@link QueueLimits}: its per-partition limits and its
     * turn in the round-robin), instead of the one the queue's {@code partitionBy} rule gives it; at most
     * {@value EnqueueOptions#MAX_PARTITION_LENGTH} characters, any text ({@code ""} is the partition of jobs
     * without one). Kept by a queue without a partition rule, where it counts once the queue gets one.
     */
    public Builder partition(String partition) {
      this.partition = partition;
      return this;
    }

    /**
     * The job that enqueues this one: recorded as its parent and shown in both jobs' detail. Set for you
     * by {@link JobContext#enqueue}.
     */
    public Builder parent(java.util.UUID parentId) {
      this.parentId = parentId;
      return this;
    }

    /** Timeout of each attempt, overriding the type's (positive, at most {@link JobType#MAX_TIMEOUT}). */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** Validates and builds. */
    public EnqueueOptions build() {
      return new EnqueueOptions(
          queue,
          priority,
          maxAttempts,
          runAt,
          delay,
          context,
          idempotencyKey,
          timeout,
          parentId,
          unique,
          capability,
          partition);
    }
  }
}
