package io.pgjobs.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A child JVM running a main class from the current test class path, its output in a log file. For
 * tests that need real separate processes: to run workers side by side, or to {@code kill -9} one.
 */
public final class JvmProcess implements AutoCloseable {
  /**
   * The flags of every child JVM, after {@code -Xmx256m}: the client compiler only and the serial
   * collector. A child JVM lives seconds to a minute, and C2's optimising compiles cost more CPU than they
   * win back in that time (a worker started and migrated: 2.2 CPU-seconds with them, 1.2 without) — CPU
   * that the other test JVMs on a 2-core machine wait for. The test JVMs themselves get the same flags
   * from the build ({@code pgjobs.test.jvmArgs}).
   */
  public static final List<String> FLAGS =
      List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

  private final Process process;
  private final Path log;

  private JvmProcess(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  /**
   * Starts {@code mainClass} with {@code args} and extra environment variables, using the same java
   * binary and class path as this JVM. Output goes to {@code target/jvm-processes/<name>.log}.
   */
  public static JvmProcess start(
      String name, Class<?> mainClass, List<String> args, Map<String, String> env) {
    return start(name, mainClass, args, env, System.getProperty("java.class.path"));
  }

  /**
   * As {@link #start(String, Class, List, Map)} with {@code jvmFlags} after {@link #FLAGS} (a later
   * {@code -Xmx} replaces theirs): for a test of what a bounded heap holds.
   */
  public static JvmProcess startWithFlags(
      String name,
      Class<?> mainClass,
      List<String> jvmFlags,
      List<String> args,
      Map<String, String> env) {
    return start(name, mainClass, jvmFlags, args, env, System.getProperty("java.class.path"));
  }

  /**
   * As {@link #start(String, Class, List, Map)} with the class path {@code classPath}: for a test that
   * runs code without some optional dependency (this JVM's class path minus its jars).
   */
  public static JvmProcess start(
      String name,
      Class<?> mainClass,
      List<String> args,
      Map<String, String> env,
      String classPath) {
    return start(name, mainClass, List.of(), args, env, classPath);
  }

  private static JvmProcess start(
      String name,
      Class<?> mainClass,
      List<String> jvmFlags,
      List<String> args,
      Map<String, String> env,
      String classPath) {
    String java = ProcessHandle.current()
        .info()
        .command()
        .orElse(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    List<String> command = new ArrayList<>();
    command.add(java);
    command.addAll(FLAGS);
    command.addAll(jvmFlags);
    command.add("-cp");
    command.add(classPath);
    command.add(mainClass.getName());
    command.addAll(args);
    try {
      Path dir = Path.of("target", "jvm-processes");
      Files.createDirectories(dir);
      Path log = dir.resolve(name + ".log");
      ProcessBuilder builder =
          new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
      builder.environment().putAll(env);
      return new JvmProcess(builder.start(), log);
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot start " + mainClass.getName() + ": " + e.getMessage(), e);
    }
  }

  /** The OS process. */
  public Process process() {
    return process;
  }

  /** The process id. */
  public long pid() {
    return process.pid();
  }

  /** Its combined stdout and stderr so far. */
  public String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  /** Kills it at once, as {@code kill -9} does: no shutdown hooks run. */
  public void kill() {
    process.destroyForcibly();
    try {
      process.waitFor();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Sends SIGTERM (shutdown hooks run). */
  public void terminate() {
    process.destroy();
  }

  /** Kills it if it still runs. */
  @Override
  public void close() {
    if (process.isAlive()) {
      kill();
    }
  }
}
