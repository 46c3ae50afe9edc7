package io.pgjobs.lifecycle;

import io.pgjobs.testkit.JvmProcess;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;

/**
 * Worker JVMs ({@link LifecycleWorkerMain}) of one test: kills every one still alive after the test, and
 * appends their output to the message of any failure of the test method.
 */
final class WorkerProcesses implements InvocationInterceptor, AfterEachCallback {
  private static final int OUTPUT_TAIL_CHARS = 6_000;
  /** Less JIT and GC work in the children: they are I/O bound and we have two cores. */
  private static final Map<String, String> CHILD_ENV =
      Map.of("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC");

  private final List<WorkerProcess> started = new CopyOnWriteArrayList<>();

  /** One worker JVM. */
  record WorkerProcess(String id, JvmProcess jvm) {
    boolean isAlive() {
      return jvm.process().isAlive();
    }

    /** kill -9: no shutdown hook runs. */
    void kill() {
      jvm.kill();
    }

    /** SIGTERM: the worker's graceful shutdown runs. */
    void terminate() {
      jvm.terminate();
    }

    String output() {
      return jvm.output();
    }
  }

  /**
   * Starts a worker JVM with id {@code id} on {@code jdbcUrl}; {@code settings} are further
   * {@code key=value} arguments of {@link LifecycleWorkerMain}.
   */
  WorkerProcess start(String id, String jdbcUrl, String... settings) {
    List<String> args = new ArrayList<>();
    args.add("url=" + jdbcUrl);
    args.add("id=" + id);
    args.addAll(List.of(settings));
    WorkerProcess process =
        new WorkerProcess(id, JvmProcess.start(id, LifecycleWorkerMain.class, args, CHILD_ENV));
    started.add(process);
    return process;
  }

  /** Starts JVM {@code main} (a worker's main class of another test) with id {@code id} and {@code args}. */
  WorkerProcess startMain(String id, Class<?> main, List<String> args) {
    WorkerProcess process = new WorkerProcess(id, JvmProcess.start(id, main, args, CHILD_ENV));
    started.add(process);
    return process;
  }

  /** The tail of every started process's output, for failure messages. */
  String outputs() {
    StringBuilder out = new StringBuilder();
    for (WorkerProcess p : started) {
      String text = p.output();
      if (text.length() > OUTPUT_TAIL_CHARS) {
        text = "[...]" + text.substring(text.length() - OUTPUT_TAIL_CHARS);
      }
      out.append("\n----- worker process ")
          .append(p.id())
          .append(" (pid ")
          .append(p.jvm().pid())
          .append(p.isAlive() ? ", alive" : ", exited")
          .append(") -----\n")
          .append(text);
    }
    return out.toString();
  }

  @Override
  public void interceptTestMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext context)
      throws Throwable {
    try {
      invocation.proceed();
    } catch (Throwable failure) {
      if (started.isEmpty()) {
        throw failure;
      }
      AssertionError withOutputs =
          new AssertionError(failure.getMessage() + "\n" + outputs(), failure);
      throw withOutputs;
    }
  }

  @Override
  public void afterEach(ExtensionContext context) {
    for (WorkerProcess p : started) {
      p.jvm().close();
    }
    started.clear();
  }

  /** Waits (blocking, bounded) for a process to exit; true if it did. */
  static boolean awaitExit(WorkerProcess process, Duration timeout) throws InterruptedException {
    return process
        .jvm()
        .process()
        .waitFor(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
  }
}
