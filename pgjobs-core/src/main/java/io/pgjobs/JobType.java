package io.pgjobs;

import io.pgjobs.config.DurationText;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A kind of job: a stable name (stored in every row and used to route it to its handler), the payload
 * class (serialised as JSON with Jackson), and the defaults every job of this type gets unless the
 * enqueue call overrides them. Share one constant between the code that enqueues and the worker:
 *
 * <pre>{@code
 * public static final JobType<SendEmail> SEND_EMAIL = JobType.of("send_email", SendEmail.class);
 * client.enqueue(SEND_EMAIL, new SendEmail("a@example.com", "Hi", "..."));
 * worker.register(SEND_EMAIL, (ctx, email) -> mailer.send(email));
 * }</pre>
 *
 * Instances are immutable; the {@code with*} methods return copies.
 *
 * @param <P> the payload type
 */
public final class JobType<P> {
  /** Queue used when nothing else is said: {@value}. */
  public static final String DEFAULT_QUEUE = "default";
  /** Priority used when nothing else is said: {@link Priority#NORMAL}. */
  public static final int DEFAULT_PRIORITY = Priority.NORMAL;
  /** Attempts used when nothing else is said: {@value}. */
  public static final int DEFAULT_MAX_ATTEMPTS = 3;
  /** Timeout of one attempt when nothing else is said: 1 hour. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofHours(1);
  /**
   * The longest timeout of one attempt: {@code Long.MAX_VALUE} milliseconds (timeouts are stored and
   * applied in milliseconds). A longer one used to be accepted and then overflow when the worker turned
   * it into milliseconds: the attempt never started, and its job stayed running, heartbeated, for as long
   * as the worker lived.
   */
  public static final Duration MAX_TIMEOUT = Duration.ofMillis(Long.MAX_VALUE);

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");

  /** The longest capability name ({@link #withCapability}). */
  public static final int MAX_CAPABILITY_LENGTH = 64;

  private static final Pattern CAPABILITY =
      Pattern.compile("[A-Za-z0-9_.\\-]{1," + MAX_CAPABILITY_LENGTH + "}");

  private final String name;
  private final Class<P> payloadClass;
  private final String queue;
  private final int priority;
  private final int maxAttempts;
  private final RetryPolicy retryPolicy;
  private final Duration timeout;
  private final PayloadValidator<? super P> validator;
  private final String idempotencyKeyFrom;
  private final P example;
  private final UniqueOptions unique;
  private final String capability;
  private final java.util.function.Function<? super P, String> partitionOf;
  private final QueueLimits limits;

  private JobType(
      String name,
      Class<P> payloadClass,
      String queue,
      int priority,
      int maxAttempts,
      RetryPolicy retryPolicy,
      Duration timeout,
      PayloadValidator<? super P> validator,
      String idempotencyKeyFrom,
      P example,
      UniqueOptions unique,
      String capability,
      java.util.function.Function<? super P, String> partitionOf,
      QueueLimits limits) {
    this.name = requireName("type", name);
    this.payloadClass = Objects.requireNonNull(payloadClass, "payloadClass");
    this.queue = requireName("queue", queue);
    this.priority = priority;
    if (maxAttempts < 1) {
      throw new InvalidJobException(
          "maxAttempts", "must be at least 1, was " + maxAttempts + " (1 means no retries)");
    }
    this.maxAttempts = maxAttempts;
    this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
    this.timeout = requireTimeout(timeout);
    this.validator = Objects.requireNonNull(validator, "validator");
    this.idempotencyKeyFrom =
        idempotencyKeyFrom == null ? null : IdempotencyKeys.requireField(idempotencyKeyFrom);
    this.example = example;
    if (unique != null && idempotencyKeyFrom != null) {
      throw new InvalidJobException(
          "unique",
          "job type '" + name + "' takes an idempotency key from field '" + idempotencyKeyFrom
              + "'; a type has either an idempotency key or unique, not both");
    }
    this.unique = unique;
    this.capability = capability == null ? null : requireCapability("capability", capability);
    this.partitionOf = partitionOf;
    this.limits = limits;
  }

  /**
   * A type named {@code name} with the defaults of {@code payloadClass}'s {@link JobDefaults}
   * annotation, if any, else the pgjobs defaults.
   */
  public static <P> JobType<P> of(String name, Class<P> payloadClass) {
    Objects.requireNonNull(payloadClass, "payloadClass");
    JobDefaults defaults = payloadClass.getAnnotation(JobDefaults.class);
    if (defaults == null) {
      return new JobType<>(
          name,
          payloadClass,
          DEFAULT_QUEUE,
          DEFAULT_PRIORITY,
          DEFAULT_MAX_ATTEMPTS,
          RetryPolicy.DEFAULT,
          DEFAULT_TIMEOUT,
          p -> java.util.List.of(),
          null,
          null,
          null,
          null,
          null,
          null);
    }
    return new JobType<>(
        name,
        payloadClass,
        defaults.queue().isEmpty() ? DEFAULT_QUEUE : defaults.queue(),
        defaults.priority() == Integer.MIN_VALUE ? DEFAULT_PRIORITY : defaults.priority(),
        defaults.maxAttempts() == 0 ? DEFAULT_MAX_ATTEMPTS : defaults.maxAttempts(),
        retryPolicyOf(defaults.retry(), payloadClass),
        defaults.timeout().isEmpty()
            ? DEFAULT_TIMEOUT
            : parseDuration("timeout", defaults.timeout(), payloadClass),
        p -> java.util.List.of(),
        defaults.idempotencyKey().isEmpty() ? null : defaults.idempotencyKey(),
        null,
        uniqueOf(defaults.unique(), payloadClass),
        defaults.capability().isEmpty() ? null : capabilityOf(defaults.capability(), payloadClass),
        null,
        null);
  }

  /**
   * A type whose name and defaults come from {@code payloadClass}'s {@link JobDefaults} annotation.
   *
   * @throws InvalidJobException if the class has no annotation or the annotation has no name
   */
  public static <P> JobType<P> of(Class<P> payloadClass) {
    JobDefaults defaults = payloadClass.getAnnotation(JobDefaults.class);
    if (defaults == null || defaults.name().isEmpty()) {
      throw new InvalidJobException(
          "type",
          payloadClass.getName()
              + " has no @JobDefaults(name = ...); give the name with JobType.of(name, payloadClass)");
    }
    return of(defaults.name(), payloadClass);
  }

  /** The stable name stored in each job row. */
  public String name() {
    return name;
  }

  /** The class the payload is read into. */
  public Class<P> payloadClass() {
    return payloadClass;
  }

  /** Default queue. */
  public String queue() {
    return queue;
  }

  /** Default priority (higher runs first). */
  public int priority() {
    return priority;
  }

  /** Default maximum attempts, at least 1. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** How long to wait between attempts. */
  public RetryPolicy retryPolicy() {
    return retryPolicy;
  }

  /** How long one attempt may run before it is interrupted and counted as failed. */
  public Duration timeout() {
    return timeout;
  }

  /** A copy with another default queue. */
  public JobType<P> withQueue(String queue) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** A copy with another default priority. */
  public JobType<P> withPriority(int priority) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** A copy with another default for maximum attempts (at least 1). */
  public JobType<P> withMaxAttempts(int maxAttempts) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** A copy with another retry policy. */
  public JobType<P> withRetryPolicy(RetryPolicy retryPolicy) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** A copy with another timeout per attempt (positive, at most {@link #MAX_TIMEOUT}). */
  public JobType<P> withTimeout(Duration timeout) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** A copy that checks payloads with {@code validator} before they are stored. */
  public JobType<P> withValidator(PayloadValidator<? super P> validator) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /**
   * A copy whose jobs take their idempotency key from a field of the payload ({@code payment_id}, or a
   * JSON pointer such as {@code /input/payment_id}): enqueueing the same value twice gives one job. An
   * explicit key ({@link EnqueueOptions.Builder#idempotencyKey}) still wins; a payload without the field
   * is refused, naming it. The key is {@code <type>:<value>}, so equal values of two types do not collide.
   * A bulk enqueue ({@link JobClient#enqueueAll}) gives each job its own key too, so calling it again after
   * {@link EnqueueOutcomeUnknownException} stores each job once.
   */
  public JobType<P> withIdempotencyKeyFrom(String field) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        Objects.requireNonNull(field, "field"),
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /** The payload field (or JSON pointer) jobs of this type take their idempotency key from, or null. */
  public String idempotencyKeyFrom() {
    return idempotencyKeyFrom;
  }

  /**
   * A copy with an example payload: what the dashboard's enqueue form and {@code GET /job-types} offer as a
   * starting point (it should pass the validator). Without one they offer the payload class's fields with
   * empty values.
   */
  public JobType<P> withExample(P example) {
    Objects.requireNonNull(example, "example");
    validate(example);
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /**
   * A copy whose jobs are unique by default ({@link UniqueOptions}): while one with the same unique key is
   * not finished, enqueueing another returns it. An enqueue's own {@link EnqueueOptions.Builder#unique} or
   * idempotency key replaces this rule for that enqueue. A type has either this or
   * {@link #withIdempotencyKeyFrom}, not both.
   */
  public JobType<P> withUnique(UniqueOptions unique) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        Objects.requireNonNull(unique, "unique"),
        capability,
        partitionOf,
        limits);
  }

  /** The type's default uniqueness rule, or null for none. */
  public UniqueOptions unique() {
    return unique;
  }

  /**
   * A copy whose jobs need a capability ({@code media}, {@code gpu}): only a worker that declares it
   * ({@code JobWorker.Builder.capabilities}) claims them; a job without one runs on any worker of its
   * queue. {@link EnqueueOptions.Builder#capability} overrides it per job. Null: no capability needed.
   * Allowed: 1 to {@value #MAX_CAPABILITY_LENGTH} characters of letters, digits and {@code _ . -}.
   */
  public JobType<P> withCapability(String capability) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        limits);
  }

  /**
   * A copy whose jobs get their partition ({@link QueueLimits}) from their payload: {@code partitionOf}
   * is applied when a job is enqueued (typed, or by name by a client that knows this type, as the HTTP API's
   * does) unless the enqueue gives a partition itself ({@link EnqueueOptions.Builder#partition}); it wins
   * over the queue's {@code partitionBy} rule. A null result, or more than 255 characters, is refused at
   * enqueue. Use it for a key the payload does not hold as one field: the host of a URL, a tenant derived
   * from an id.
   */
  public JobType<P> withPartition(java.util.function.Function<? super P, String> partitionOf) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        Objects.requireNonNull(partitionOf, "partitionOf"),
        limits);
  }

  /**
   * A copy that declares its queue's limits ({@link QueueLimits}): a worker that registers it applies them
   * to {@link #queue()} when it starts, as {@code JobWorker.Builder.limits} does (limits set at run time
   * win until cleared; {@code JobWorker.Builder.limits} for the same queue wins over this).
   */
  public JobType<P> withLimits(QueueLimits limits) {
    return new JobType<>(
        name,
        payloadClass,
        queue,
        priority,
        maxAttempts,
        retryPolicy,
        timeout,
        validator,
        idempotencyKeyFrom,
        example,
        unique,
        capability,
        partitionOf,
        Objects.requireNonNull(limits, "limits"));
  }

  /** The limits this type declares for its queue ({@link #withLimits}), if any. */
  public java.util.Optional<QueueLimits> limits() {
    return java.util.Optional.ofNullable(limits);
  }

  /**
   * This type's partition of {@code payload} ({@link #withPartition}), or null if the type has no partition
   * function.
   *
   * @throws InvalidJobException if the function fails, returns null or more than 255 characters
   */
  public String partitionOf(P payload) {
    if (partitionOf == null) {
      return null;
    }
    String key;
    try {
      key = partitionOf.apply(payload);
    } catch (RuntimeException e) {
      throw new InvalidJobException(
          "partition", "job type '" + name + "' could not compute it: " + e.getMessage());
    }
    if (key == null || key.length() > EnqueueOptions.MAX_PARTITION_LENGTH) {
      throw new InvalidJobException(
          "partition",
          "job type '" + name + "' computed "
              + (key == null ? "none" : key.length() + " characters") + "; allowed: 0 to "
              + EnqueueOptions.MAX_PARTITION_LENGTH + " characters");
    }
    return key;
  }

  /** Internal: {@link #partitionOf} for a payload read by name. */
  String partitionOfUnchecked(Object payload) {
    @SuppressWarnings("unchecked")
    P typed = (P) payload;
    return partitionOf(typed);
  }

  /** The capability jobs of this type need by default, or null if any worker may run them. */
  public String capability() {
    return capability;
  }

  /** The example payload given with {@link #withExample}, if any. */
  public java.util.Optional<P> example() {
    return java.util.Optional.ofNullable(example);
  }

  /**
   * Checks a payload with this type's validator.
   *
   * @throws InvalidPayloadException listing every problem
   */
  public void validate(P payload) {
    java.util.List<PayloadValidator.FieldProblem> problems = validator.validate(payload);
    if (problems != null && !problems.isEmpty()) {
      throw new InvalidPayloadException(name, problems);
    }
  }

  /** Same, for a payload of unchecked type (read by name from JSON). */
  void validateUnchecked(Object payload) {
    validate(payloadClass.cast(payload));
  }

  @Override
  public String toString() {
    return "JobType[" + name + ", queue=" + queue + ", priority=" + priority + ", maxAttempts="
        + maxAttempts + ", timeout=" + DurationText.format(timeout) + "]";
  }

  static String requireName(String field, String value) {
    if (value == null) {
      throw new InvalidJobException(field, "is required");
    }
    if (!NAME.matcher(value).matches()) {
      throw new InvalidJobException(
          field,
          "invalid name '" + value
              + "'; allowed: 1 to 255 characters of letters, digits and _ . : - /");
    }
    return value;
  }

  /**
   * Checks a capability name: 1 to {@value #MAX_CAPABILITY_LENGTH} characters of letters, digits and
   * {@code _ . -} (the jobs table's CHECK says the same).
   *
   * @throws InvalidJobException naming {@code field} and what is allowed
   */
  public static String requireCapability(String field, String value) {
    if (value == null) {
      throw new InvalidJobException(field, "is required");
    }
    if (!CAPABILITY.matcher(value).matches()) {
      throw new InvalidJobException(
          field,
          "invalid capability '" + value + "'; allowed: 1 to " + MAX_CAPABILITY_LENGTH
              + " characters of letters, digits and _ . -");
    }
    return value;
  }

  private static String capabilityOf(String capability, Class<?> owner) {
    if (!CAPABILITY.matcher(capability).matches()) {
      throw new InvalidJobException(
          "capability",
          "@JobDefaults on " + owner.getName() + ": invalid capability '" + capability
              + "'; allowed: 1 to " + MAX_CAPABILITY_LENGTH
              + " characters of letters, digits and _ . -");
    }
    return capability;
  }

  static Duration requireTimeout(Duration timeout) {
    if (timeout == null || timeout.isZero() || timeout.isNegative()) {
      throw new InvalidJobException("timeout", "must be a positive duration, was " + timeout);
    }
    if (timeout.compareTo(MAX_TIMEOUT) > 0) {
      throw new InvalidJobException(
          "timeout",
          "must be at most " + MAX_TIMEOUT.toMillis() + " ms (JobType.MAX_TIMEOUT), was "
              + timeout);
    }
    return timeout;
  }

  private static RetryPolicy retryPolicyOf(JobDefaults.Retry retry, Class<?> owner) {
    Duration base = parseDuration("retry.base", retry.base(), owner);
    Duration cap = parseDuration("retry.cap", retry.cap(), owner);
    try {
      return switch (retry.backoff()) {
        case FIXED -> RetryPolicy.fixed(base);
        case LINEAR -> RetryPolicy.linear(base, cap);
        case EXPONENTIAL -> RetryPolicy.exponential(base, cap, retry.jitter());
        case DECORRELATED_JITTER -> RetryPolicy.decorrelatedJitter(base, cap);
      };
    } catch (IllegalArgumentException e) {
      throw new InvalidJobException(
          "retry", "@JobDefaults on " + owner.getName() + ": " + e.getMessage(), e);
    }
  }

  private static UniqueOptions uniqueOf(JobDefaults.Unique unique, Class<?> owner) {
    if (!unique.enabled()) {
      return null;
    }
    UniqueOptions.Builder b = UniqueOptions.builder();
    if (java.util.Arrays.asList(unique.byArgs()).equals(java.util.List.of("*"))) {
      b.byArgs();
    } else {
      b.byFields(unique.byArgs());
    }
    if (unique.byQueue()) {
      b.byQueue();
    }
    if (!unique.period().isEmpty()) {
      b.period(parseDuration("unique.period", unique.period(), owner));
    }
    b.replace(unique.replace());
    b.states(unique.states());
    try {
      return b.build();
    } catch (InvalidJobException e) {
      throw new InvalidJobException(
          e.field(),
          "@JobDefaults on " + owner.getName() + ": "
              + e.getMessage().substring(e.field().length() + 2),
          e);
    }
  }

  private static Duration parseDuration(String field, String text, Class<?> owner) {
    try {
      return DurationText.parse(text);
    } catch (IllegalArgumentException e) {
      throw new InvalidJobException(
          field, "@JobDefaults on " + owner.getName() + ": " + e.getMessage(), e);
    }
  }
}
