package io.pgjobs.bench;

import io.pgjobs.config.DatabaseUrl;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link BenchWorkerMain} in a child JVM: the same java binary and class path as this process, the
 * flags of {@link #JVM_FLAGS}. Its stderr goes to a temporary file that failures quote; it is destroyed
 * by {@link #close()} if still alive, and exits by itself when its stdin closes, so a killed bench leaves
 * no worker behind.
 */
final class WorkerProcess implements AutoCloseable {
  /**
   * JVM flags of the worker process: a lean JVM for one worker with default settings (10 handler lanes,
   * claim batch 1,000, a 15-connection pool). Chosen by measuring W3 on a 2-core machine with JDK 25
   * (50,000 no-op jobs, 3 to 5 runs each, and drains of 500,000 jobs for the steady state); the worker's
   * live heap after a young GC is about 6 MiB throughout.
   * <ul>
   *   <li>{@code -Xmx64m}: with Serial GC the committed heap grows to the maximum and stays, so the
   *       maximum is the main RSS lever: 48m gave 88 MiB peak RSS, 64m 92 MiB, 128m 110 MiB, no limit
   *       (a quarter of RAM) 178 MiB, at the same throughput. 64m keeps ten times the live heap in hand
   *       for bigger payloads; GC pauses totalled about 65 ms in a 500,000-job drain.
   *   <li>{@code -XX:+UseSerialGC}: no GC threads, no G1 region and remembered-set tables: G1 with the
   *       same 64m maximum peaked at 112 MiB (C1) and 136 MiB (C2), at the same throughput.
   *   <li>{@code -XX:TieredStopAtLevel=1}: C1 only. C2 added about 25 MiB (118 MiB at 64m Serial) and its
   *       compiler threads compete with PostgreSQL for the two cores while a fresh process warms up:
   *       50,000-job drains were 42-48k jobs/s with C2 against 52-63k with C1; over 500,000 jobs both
   *       ran at the same rate (the work is JDBC and waiting on PostgreSQL).
   * </ul>
   * Also measured, no effect worth a flag: {@code -Xss512k} with {@code -XX:ReservedCodeCacheSize=32m}
   * and {@code -XX:MaxMetaspaceSize=64m} (92 MiB either way), {@code -XX:+UseCompactObjectHeaders}
   * (118 vs 116 MiB with C2). The JVM defaults peaked at 254 MiB. Override for experiments with the
   * environment variable {@value #FLAGS_ENV} (space-separated; replaces these flags).
   */
  static final List<String> JVM_FLAGS =
      List.of("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
  /** Environment variable that replaces {@link #JVM_FLAGS}, for measuring alternatives. */
  static final String FLAGS_ENV = "PGJOBS_BENCH_WORKER_JAVA_OPTS";

  private final String name;
  private final Process process;
  private final Path stderr;
  private final CountDownLatch ready = new CountDownLatch(1);
  /** Lines on stdout other than READY: the answers to {@link #request}. */
  private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();

  private final Thread shutdownHook;

  private WorkerProcess(String name, Process process, Path stderr) {
    this.name = name;
    this.process = process;
    this.stderr = stderr;
    Thread reader = new Thread(this::readStdout, "bench-" + name + "-stdout");
    reader.setDaemon(true);
    reader.start();
    // On a normal exit or SIGTERM of the bench; on SIGKILL the child sees its stdin close instead.
    this.shutdownHook = new Thread(process::destroyForcibly, "bench-" + name + "-kill");
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }

  /** The flags in effect: {@value #FLAGS_ENV} if set, else {@link #JVM_FLAGS}. */
  static List<String> jvmFlags() {
    String override = System.getenv(FLAGS_ENV);
    if (override == null || override.isBlank()) {
      return JVM_FLAGS;
    }
    return Arrays.stream(override.trim().split("\\s+")).toList();
  }

  /** Starts a worker process on {@code schema}; {@code name} labels its threads and errors. */
  static WorkerProcess start(String name, DatabaseUrl database, String schema) {
    return start(name, database, BenchWorkerMain.class, List.of(schema));
  }

  /**
   * Starts {@code main} (a class speaking the protocol of {@link BenchWorkerMain}: READY, then lines on
   * stdin until STOP) with {@code args}, in a child JVM with the same flags.
   */
  static WorkerProcess start(String name, DatabaseUrl database, Class<?> main, List<String> args) {
    String java = ProcessHandle.current()
        .info()
        .command()
        .orElse(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    List<String> command = new ArrayList<>();
    command.add(java);
    command.addAll(jvmFlags());
    command.add("-Dlogback.configurationFile=logback-bench.xml");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(main.getName());
    command.addAll(args);
    try {
      Path log = Files.createTempFile("pgjobs-bench-" + name + "-", ".stderr");
      ProcessBuilder builder = new ProcessBuilder(command).redirectError(log.toFile());
      builder.environment().put(BenchWorkerMain.ENV_JDBC_URL, database.jdbcUrl());
      putIfNotNull(builder, BenchWorkerMain.ENV_USER, database.user());
      putIfNotNull(builder, BenchWorkerMain.ENV_PASSWORD, database.password());
      putIfNotNull(builder, BenchWorkerMain.ENV_DATABASE, database.database());
      builder.environment().remove(FLAGS_ENV);
      try {
        return new WorkerProcess(name, builder.start(), log);
      } catch (IOException | RuntimeException e) {
        Files.deleteIfExists(log);
        throw e;
      }
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot start the " + name + " process: " + e.getMessage(), e);
    }
  }

  private static void putIfNotNull(ProcessBuilder builder, String key, String value) {
    if (value != null) {
      builder.environment().put(key, value);
    }
  }

  private void readStdout() {
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = out.readLine()) != null) {
        if (line.trim().equals(BenchWorkerMain.READY)) {
          ready.countDown();
        } else {
          replies.add(line);
        }
      }
    } catch (IOException e) {
      // The process went away; awaitReady and stop report it.
    }
  }

  /** Waits until the worker listens; throws with the process's stderr if it exits or times out first. */
  void awaitReady(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!ready.await(50, TimeUnit.MILLISECONDS)) {
      if (!process.isAlive()) {
        throw failure("exited with status " + process.exitValue() + " before it was ready");
      }
      if (System.nanoTime() > deadline) {
        throw failure("was not ready within " + timeout);
      }
    }
  }

  /**
   * Writes {@code command} as a line to the process's stdin and returns the first line of its stdout
   * that starts with the same word; throws with its stderr if it exits or does not answer in time.
   */
  String request(String command, Duration timeout) throws InterruptedException {
    send(command);
    String word = command.split(" ", 2)[0];
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      String line = replies.poll(50, TimeUnit.MILLISECONDS);
      if (line != null && line.startsWith(word)) {
        return line;
      }
      if (line == null && !process.isAlive()) {
        throw failure(
            "exited with status " + process.exitValue() + " before it answered " + command);
      }
      if (System.nanoTime() > deadline) {
        throw failure("did not answer " + command + " within " + timeout);
      }
    }
  }

  /** Writes {@code command} as a line to the process's stdin; throws with its stderr if it is gone. */
  void send(String command) {
    try {
      OutputStream in = process.getOutputStream();
      in.write((command + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      throw failure("did not take the command " + command + ": " + e.getMessage());
    }
  }

  /** Throws with the process's stderr if it is no longer running. */
  void checkAlive() {
    if (!process.isAlive()) {
      throw failure("exited with status " + process.exitValue() + " while it should run");
    }
  }

  /** The process id. */
  long pid() {
    return process.pid();
  }

  /** Peak resident memory so far (VmHWM of /proc/PID/status) in MiB; 0 where /proc is missing. */
  double peakRssMib() {
    return Memory.peakMib(process.pid());
  }

  /** Asks the worker to stop (and closes its stdin), waits for a clean exit; throws if it is not one. */
  void stop(Duration timeout) throws InterruptedException {
    try (OutputStream in = process.getOutputStream()) {
      in.write((BenchWorkerMain.STOP + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      // Already gone: the exit status below says how.
    }
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw failure("did not exit within " + timeout + " of " + BenchWorkerMain.STOP);
    }
    if (process.exitValue() != 0) {
      throw failure("exited with status " + process.exitValue());
    }
  }

  /** Closes the process's stdin without a STOP line, as the end of the bench process does. */
  void closeStdin() throws IOException {
    process.getOutputStream().close();
  }

  private IllegalStateException failure(String what) {
    String log;
    try {
      log = Files.readString(stderr, StandardCharsets.UTF_8);
    } catch (IOException e) {
      log = "(stderr unreadable: " + e.getMessage() + ")";
    }
    if (log.length() > 8_000) {
      log = "..." + log.substring(log.length() - 8_000);
    }
    return new IllegalStateException("the " + name + " process (pid " + process.pid() + ") " + what
        + (log.isBlank() ? "; stderr was empty" : "; its stderr:\n" + log.strip()));
  }

  /** Kills the process if it still runs and removes its stderr file. */
  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException e) {
      // Shutting down already.
    }
    try {
      Files.deleteIfExists(stderr);
    } catch (IOException e) {
      // A temporary file; the OS cleans up.
    }
  }
}
