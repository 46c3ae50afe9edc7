package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What a failed attempt stores: the exception's class, a message that is never the text "null" (an
 * exception without one is described by its class and its causes' first message), and its cause chain;
 * U+0000, which jsonb cannot hold, is replaced everywhere.
 */
class FailureRecordTest extends PgJobsTestBase {
  private JobError lastErrorOf(RuntimeException thrown) {
    start(worker().pollInterval(java.time.Duration.ofMillis(50)).register(NUMBERED, (ctx, p) -> {
      throw thrown;
    }));
    UUID id = client
        .enqueue(
            NUMBERED, new Numbered(1), EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id();
    Job job = awaitState(id, JobState.FAILED);
    return job.errors().get(job.errors().size() - 1);
  }

  @Test
  void anExceptionWithoutAMessageIsStoredAsItsClassAndItsCausesFirstMessage() {
    JobError error = lastErrorOf(new UnsupportedOperationException(
        (String) null,
        new java.io.UncheckedIOException(
            new java.net.ConnectException("Connection refused\u0000 at port 1"))));
    assertThat(error.errorClass()).isEqualTo("java.lang.UnsupportedOperationException");
    assertThat(error.message())
        .isEqualTo(
            "java.lang.UnsupportedOperationException without a message; caused by"
                + " java.io.UncheckedIOException: java.net.ConnectException: Connection refused\uFFFD at port 1");
    assertThat(error.cause())
        .isEqualTo("java.io.UncheckedIOException: java.net.ConnectException: Connection refused"
            + "\uFFFD at port 1\njava.net.ConnectException: Connection refused\uFFFD at port 1");
  }

  @Test
  void anExceptionWithoutMessageOrCauseIsNeverStoredAsNull() {
    JobError error = lastErrorOf(new IllegalStateException());
    assertThat(error.message())
        .isEqualTo("java.lang.IllegalStateException without a message")
        .isNotEqualTo("null");
    assertThat(error.cause()).isNull();
  }
}
