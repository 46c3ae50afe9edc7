package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.cli.demo.SummarizeTextJob.SummarizeText;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SummarizeTextJobTest extends DemoJobsTestBase {
  private static final String TEXT = "PostgreSQL stores the jobs in a table. "
      + "The weather was pleasant on Tuesday. "
      + "Workers claim jobs from the PostgreSQL table with SKIP LOCKED, so workers never claim the same jobs twice. "
      + "Lunch was served at noon. "
      + "When workers finish jobs, PostgreSQL keeps the finished jobs for a day. "
      + "Birds sang.";

  @Test
  void keepsTheBestScoringSentencesInTheirOriginalOrderAndReportsProgress() {
    startWorker(Map.of());

    var id =
        client.enqueue(SummarizeTextJob.TYPE, new SummarizeText(TEXT, 2)).job().id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    assertThat(job.output().get("summary").asString())
        .isEqualTo(
            "Workers claim jobs from the PostgreSQL table with SKIP LOCKED, so workers never claim the same jobs twice."
                + " When workers finish jobs, PostgreSQL keeps the finished jobs for a day.");
    assertThat(job.progressPercent()).isEqualTo(100);
    assertThat(job.progressMessage()).isEqualTo("kept 2 of 6 sentences");
  }

  @Test
  void keepsEverySentenceWhenAskedForMoreThanTheTextHas() {
    startWorker(Map.of());

    var id = client
        .enqueue(SummarizeTextJob.TYPE, new SummarizeText("One fact here. Another fact there.", 5))
        .job()
        .id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    assertThat(job.output().get("summary").asString())
        .isEqualTo("One fact here. Another fact there.");
  }

  @Test
  void splitsSentencesAndIgnoresStopWords() {
    assertThat(SummarizeTextJob.sentences(
            "Smith arrived at 3.30 pm.  It rained!\nDid it   stop? Yes."))
        .containsExactly("Smith arrived at 3.30 pm.", "It rained!", "Did it stop?", "Yes.");
    assertThat(SummarizeTextJob.contentWords("The jobs are in the queue, and it's fine."))
        .containsExactly("jobs", "queue", "fine");
  }

  @Test
  void breaksTiesInFavourOfTheEarlierSentence() {
    assertThat(SummarizeTextJob.summary(List.of("a", "b", "c"), new double[] {1, 2, 2}, 1))
        .isEqualTo("b");
    assertThat(SummarizeTextJob.summary(List.of("a", "b", "c"), new double[] {3, 2, 3}, 2))
        .isEqualTo("a c");
  }
}
