package io.pgjobs.workflow;

import io.pgjobs.JobState;
import java.util.UUID;
import tools.jackson.databind.json.JsonMapper;

/**
 * A job a workflow run started and awaited ({@link WorkflowContext#awaitJobs}), as it ended: succeeded,
 * failed or cancelled, with its output.
 */
public final class AwaitedJob {
  private final UUID id;
  private final String type;
  private final JobState state;
  private final String outputJson;
  private final String lastError;
  private final JsonMapper mapper;

  AwaitedJob(
      UUID id,
      String type,
      JobState state,
      String outputJson,
      String lastError,
      JsonMapper mapper) {
    this.id = id;
    this.type = type;
    this.state = state;
    this.outputJson = outputJson;
    this.lastError = lastError;
    this.mapper = mapper;
  }

  /** Its id. */
  public UUID id() {
    return id;
  }

  /** Its job type. */
  public String type() {
    return type;
  }

  /** How it ended: {@link JobState#SUCCEEDED}, {@link JobState#FAILED} or {@link JobState#CANCELLED}. */
  public JobState state() {
    return state;
  }

  /** True if it succeeded. */
  public boolean succeeded() {
    return state == JobState.SUCCEEDED;
  }

  /** Its output read as {@code type}, or null if it had none (or did not succeed). */
  public <T> T output(Class<T> type) {
    return outputJson == null ? null : mapper.readValue(outputJson, type);
  }

  /** The message of its last error, or null. */
  public String lastError() {
    return lastError;
  }

  @Override
  public String toString() {
    return "AwaitedJob[" + id + " " + type + " " + state.value() + "]";
  }
}
