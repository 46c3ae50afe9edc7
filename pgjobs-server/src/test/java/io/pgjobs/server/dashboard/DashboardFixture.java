package io.pgjobs.server.dashboard;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.RetryPolicy;
import io.pgjobs.server.ApiServer;
import io.pgjobs.server.MigratedDatabase;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;

/**
 * What a dashboard test runs against: a throw-away database, a real API server on a free port and a
 * real worker whose handlers the test steers through the payload's {@code note}:
 * <ul>
 *   <li>{@code ok}: succeeds at once with output {@code {"ok": true}}.
 *   <li>{@code steps}: reports 10 % ("step 1"), waits for {@link #releaseStep}, reports 60 % ("step 2"),
 *       waits again, then succeeds with output {@code {"done": key}}.
 *   <li>{@code block}: runs until cancelled (or released at the end of the test class).
 *   <li>{@code fail}: fails with "boom: &lt;key&gt;"; {@code fail-once}: fails the first time its key runs,
 *       succeeds after that; {@code flaky}: fails with "gateway down" while {@link #gatewayDown} says so;
 *       {@code error}: fails with the key as its message; {@code steps-after-failure}: fails its first
 *       attempt, then runs as {@code steps}.
 * </ul>
 * A {@code send_email} job succeeds unless its address ends in {@code @bounce.example}.
 */
final class DashboardFixture implements AutoCloseable {
  static final Duration WAIT = Duration.ofSeconds(60);
  /** Queues the worker serves (a job enqueued elsewhere stays queued). */
  static final List<String> SERVED_QUEUES = List.of("default", "emails", "images", "reports");

  /** The payload of the steerable type. */
  record Task(String note, String key) {}

  /** A payload with a validator, for the form's validation errors. */
  record SendEmail(String to, String subject) {}

  /** Retries 200 ms apart, so a job with attempts left runs again at once. */
  static final JobType<Task> TASK =
      JobType.of("task", Task.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(200)));

  static final JobType<SendEmail> SEND_EMAIL = JobType.of("send_email", SendEmail.class)
      .withQueue("emails")
      .withValidator(email -> {
        List<FieldProblem> problems = new ArrayList<>();
        if (email.to() == null || !email.to().contains("@")) {
          problems.add(new FieldProblem("to", "must be an e-mail address"));
        }
        if (email.subject() == null || email.subject().isBlank()) {
          problems.add(new FieldProblem("subject", "is required"));
        }
        return problems;
      })
      .withExample(new SendEmail("ada@example.com", "Hello"));

  final TestDatabase db;
  final JobClient client;
  volatile ApiServer server;
  JobWorker worker;
  private final Map<String, CountDownLatch[]> steps = new ConcurrentHashMap<>();
  private final Set<String> failedOnce = ConcurrentHashMap.newKeySet();
  private final CountDownLatch endOfTests = new CountDownLatch(1);
  private final AtomicBoolean down = new AtomicBoolean();

  private DashboardFixture(TestDatabase db, JobClient client, ApiServer server) {
    this.db = db;
    this.client = client;
    this.server = server;
  }

  /**
   * Starts everything; {@code server} may add settings (tokens) to the server's builder, and
   * {@code moreTypes} names more types that run as {@code task} does (for lifelike screenshots).
   */
  static DashboardFixture start(UnaryOperator<ApiServer.Builder> server, String... moreTypes) {
    TestDatabase db = MigratedDatabase.create();
    try {
      List<JobType<?>> types = new ArrayList<>(List.of(TASK, SEND_EMAIL));
      for (String name : moreTypes) {
        types.add(JobType.of(name, Task.class).withRetryPolicy(TASK.retryPolicy()));
      }
      JobClient client = JobClient.builder(db.dataSource())
          .knownTypes(types)
          .knownWorkflows(FLOW)
          .build();
      ApiServer api = server
          .apply(ApiServer.builder(client).host("127.0.0.1").port(0))
          .build()
          .start();
      DashboardFixture f = new DashboardFixture(db, client, api);
      JobWorker.Builder w = JobWorker.builder(db.dataSource())
          .register(TASK, f::handle)
          .workflow(FLOW, (ctx, t) -> {
            // Note "steps": each of the last two steps waits for releaseStep(key, 1 and 2).
            boolean gated = t.note().equals("steps");
            ctx.step("fetch", String.class, () -> "fetched " + t.key()).run();
            ctx.step("store", Integer.class, () -> {
                  if (gated) {
                    pass(f.gates(t.key())[0]);
                  }
                  return 42;
                })
                .run();
            ctx.step("enrich", String.class, () -> {
                  if (gated) {
                    pass(f.gates(t.key())[1]);
                  }
                  throw new IllegalStateException("enrichment service down");
                })
                .optional()
                .run();
            return Map.of("ok", true);
          })
          .register(SEND_EMAIL, (ctx, email) -> {
            if (email.to().endsWith("@bounce.example")) {
              throw new IOException("SMTP 550: mailbox unavailable\nrecipient " + email.to());
            }
            return Map.of("sent", true);
          })
          .pollInterval(Duration.ofMillis(100))
          .progressThrottle(Duration.ZERO);
      for (JobType<?> type : types.subList(2, types.size())) {
        @SuppressWarnings("unchecked")
        JobType<Task> more = (JobType<Task>) type;
        w.register(more, f::handle);
      }
      for (String queue : SERVED_QUEUES) {
        w.queue(queue, 4);
      }
      f.worker = w.build().start();
      return f;
    } catch (RuntimeException e) {
      db.close();
      throw e;
    }
  }

  static DashboardFixture start() {
    return start(b -> b);
  }

  private Object handle(io.pgjobs.JobContext ctx, Task task) throws Exception {
    switch (task.note()) {
      case "steps", "steps-after-failure" -> {
        if (task.note().equals("steps-after-failure") && failedOnce.add(task.key())) {
          throw new IOException("connection reset by peer while fetching " + task.key());
        }
        CountDownLatch[] gates = gates(task.key());
        ctx.progress(10, "step 1");
        pass(gates[0]);
        ctx.progress(60, "step 2");
        pass(gates[1]);
        return Map.of("done", task.key());
      }
      case "block" -> {
        pass(endOfTests);
        return null;
      }
      case "fail" -> throw new IllegalStateException("boom: " + task.key());
      case "error" -> throw new IllegalStateException(task.key());
      case "flaky" -> {
        if (down.get()) {
          // Its own exception class, so its dead-letter group holds only these jobs.
          throw new java.net.ConnectException("gateway down\nwhile calling " + task.key());
        }
        return Map.of("ok", true);
      }
      case "fail-once" -> {
        if (failedOnce.add(task.key())) {
          throw new IllegalStateException("first try fails: " + task.key());
        }
        return Map.of("ok", true, "second", true);
      }
      default -> {
        return Map.of("ok", true);
      }
    }
  }

  private static void pass(CountDownLatch latch) throws InterruptedException {
    if (!latch.await(2, TimeUnit.MINUTES)) {
      throw new IllegalStateException("the test never released this job");
    }
  }

  private CountDownLatch[] gates(String key) {
    return steps.computeIfAbsent(
        key, k -> new CountDownLatch[] {new CountDownLatch(1), new CountDownLatch(1)});
  }

  /** Stops the API server (the worker goes on); {@link #startServerAgain()} brings it back on the same port. */
  int stopServer() {
    int port = server.port();
    server.close();
    return port;
  }

  /** A new API server on {@code port}, as a restarted process would be. */
  void startServerAgain(int port) {
    server = ApiServer.builder(client).host("127.0.0.1").port(port).build().start();
  }

  /** Whether {@code flaky} jobs fail. */
  void gatewayDown(boolean isDown) {
    down.set(isDown);
  }

  /** Lets the {@code steps} job with this key go on past its next step (1 or 2). */
  void releaseStep(String key, int step) {
    gates(key)[step - 1].countDown();
  }

  /** The dashboard's address. */
  String url(String hashPath) {
    return "http://127.0.0.1:" + server.port() + "/" + (hashPath.isEmpty() ? "" : "#" + hashPath);
  }

  /**
   * A workflow of three steps (the last optional, and failing): its runs show their steps. A run with note
   * {@code steps} waits for {@link #releaseStep} before its second and third steps.
   */
  static final io.pgjobs.workflow.WorkflowType<Task> FLOW =
      io.pgjobs.workflow.WorkflowType.of("dash_flow", Task.class).withMaxAttempts(1);

  UUID enqueue(String note, String key, String queue) {
    return enqueue(note, key, EnqueueOptions.builder().queue(queue).build());
  }

  UUID enqueue(String note, String key, EnqueueOptions options) {
    return client.enqueue(TASK, new Task(note, key), options).job().id();
  }

  Job job(UUID id) {
    return client.get(id).orElseThrow();
  }

  Job awaitState(UUID id, JobState state) {
    return Await.awaitState(client::get, id, Job::state, state, WAIT);
  }

  @Override
  public void close() {
    endOfTests.countDown();
    steps.values().forEach(g -> {
      g[0].countDown();
      g[1].countDown();
    });
    try {
      if (worker != null) {
        worker.close();
      }
    } finally {
      try {
        server.close();
      } finally {
        db.close();
      }
    }
  }
}
