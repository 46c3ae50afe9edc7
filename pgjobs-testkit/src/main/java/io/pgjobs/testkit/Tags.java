package io.pgjobs.testkit;

/**
 * The JUnit tags of the test pyramid, for {@code @Tag(Tags.PROCESS)}. An untagged test class needs only
 * the JVM and the PostgreSQL server of {@code PGJOBS_TEST_DATABASE_URL} and takes a moment; {@code
 * ./run-tests --fast} runs only those of pgjobs-testkit and pgjobs-core (unit tests and the store/worker
 * contract). {@code ./run-tests} runs every tag but {@link #DOCS}, and {@code .ci/run} (the Maven {@code
 * release} profile) all of them.
 */
public final class Tags {
  /** Starts processes: child JVMs ({@link JvmProcess}), PostgreSQL servers of its own, the packaged CLI. */
  public static final String PROCESS = "process";
  /** Drives a headless Chromium. */
  public static final String BROWSER = "browser";
  /** Runs a PgBouncer ({@link PgBouncer}). */
  public static final String PGBOUNCER = "pgbouncer";
  /** Long runs under load or under repeated failures (a minute or so each). */
  public static final String SOAK = "soak";
  /**
   * Asserts something that other test JVMs keeping the machine busy can break (a query that must take under
   * 100 ms): runs after the module's other tests, alone.
   */
  public static final String SERIAL = "serial";
  /**
   * Needs only the JVM and PostgreSQL but takes several seconds of waiting (timeouts, thresholds, delays) or
   * of volume (hundreds of thousands of rows): in {@code ./run-tests}, not in the fast tier.
   */
  public static final String SLOW = "slow";
  /**
   * Holds the server-wide lock ({@link Exclusive}, which carries this tag): {@code ./run-tests} runs these
   * classes in a lane of their own, one at a time, beside the other tests.
   */
  public static final String EXCLUSIVE = "exclusive";
  /** Writes documentation (the README's screenshots): only in the {@code release} profile. */
  public static final String DOCS = "docs";

  private Tags() {}
}
