package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Child jobs from a handler ({@code ctx.enqueue}, the seed's {@code ctx.dispatch_job}). */
class ChildJobsTest extends PgJobsTestBase {
  /** What the parent does: commit or roll back its transaction. */
  public record Parent(boolean commit) {}

  static final JobType<Parent> PARENT = JobType.of("parent", Parent.class).withMaxAttempts(1);
  static final JobType<Numbered> CHILD = JobType.of("child", Numbered.class);

  @Test
  void aHandlerThatEnqueuesAChildInItsTransactionAndRollsBackLeavesNoChild() {
    UUID parent = client.enqueue(PARENT, new Parent(false)).job().id();
    start(worker().register(CHILD, (ctx, n) -> null).register(PARENT, (ctx, p) -> {
      try (Connection tx = ctx.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        ctx.enqueue(tx, CHILD, new Numbered(1), EnqueueOptions.DEFAULTS);
        ctx.complete(tx, null);
        tx.rollback(); // the attempt's work is undone: its success and its child with it
      }
      return null;
    }));

    awaitState(parent, JobState.FAILED);
    assertThat(count("SELECT count(*) FROM (SELECT id FROM pgjobs.jobs WHERE type = 'child'"
            + " UNION ALL SELECT id FROM pgjobs.finished_jobs WHERE type = 'child') c"))
        .isZero();
    assertThat(client.children(parent, 10)).isEmpty();
  }

  @Test
  void aHandlerThatCommitsLeavesExactlyOneChildLinkedToItsParent() {
    UUID parent = client.enqueue(PARENT, new Parent(true)).job().id();
    start(worker().register(CHILD, (ctx, n) -> null).register(PARENT, (ctx, p) -> {
      try (Connection tx = ctx.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        ctx.enqueue(tx, CHILD, new Numbered(1), EnqueueOptions.DEFAULTS);
        ctx.complete(tx, null);
        tx.commit();
      }
      return null;
    }));

    awaitState(parent, JobState.SUCCEEDED);
    List<UUID> children = client.children(parent, 10);
    assertThat(children).hasSize(1);
    Job child = awaitState(children.get(0), JobState.SUCCEEDED, Duration.ofSeconds(20));
    assertThat(child.parentId()).isEqualTo(parent);
    assertThat(child.type()).isEqualTo("child");
    assertThat(client.get(parent).orElseThrow().parentId()).isNull();
  }

  @Test
  void aChildEnqueuedAtOnceExistsEvenIfTheParentFailsAfterwards() {
    UUID parent = client.enqueue(PARENT, new Parent(true)).job().id();
    start(worker().register(CHILD, (ctx, n) -> null).register(PARENT, (ctx, p) -> {
      ctx.enqueue(
          CHILD,
          new Numbered(2),
          EnqueueOptions.builder().priority(Priority.HIGH).build());
      throw new IllegalStateException("fails after dispatching");
    }));

    awaitState(parent, JobState.FAILED);
    List<UUID> children = client.children(parent, 10);
    assertThat(children).hasSize(1);
    Job child = client.get(children.get(0)).orElseThrow();
    assertThat(child.parentId()).isEqualTo(parent);
    assertThat(child.priority()).isEqualTo(Priority.HIGH);
  }
}
