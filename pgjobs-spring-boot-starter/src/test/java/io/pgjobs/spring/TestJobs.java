package io.pgjobs.spring;

import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/** Job types and handler beans the starter's tests run. */
final class TestJobs {
  private TestJobs() {}

  record Greet(String name) {}

  record Sleep(long millis) {}

  static final JobType<Greet> GREET = JobType.of("greet", Greet.class).withQueue("greetings");
  static final JobType<Sleep> SLEEP = JobType.of("sleep", Sleep.class).withQueue("slow");

  /** Records the names it greeted, in order. */
  static final class GreetHandler implements PgJobsHandler<Greet> {
    final List<String> greeted = new CopyOnWriteArrayList<>();

    @Override
    public JobType<Greet> type() {
      return GREET;
    }

    @Override
    public Object run(JobContext context, Greet payload) {
      greeted.add(payload.name());
      return java.util.Map.of("greeting", "hello " + payload.name());
    }
  }

  /** Sleeps for the payload's time; counts down {@link #started} when it starts. */
  static final class SleepHandler implements PgJobsHandler<Sleep> {
    final CountDownLatch started = new CountDownLatch(1);

    @Override
    public JobType<Sleep> type() {
      return SLEEP;
    }

    @Override
    public Object run(JobContext context, Sleep payload) throws InterruptedException {
      started.countDown();
      Thread.sleep(payload.millis()); // interrupted when the shutdown grace has passed
      return null;
    }
  }
}
