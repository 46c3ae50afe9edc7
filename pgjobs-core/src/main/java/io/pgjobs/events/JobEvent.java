package io.pgjobs.events;

import io.pgjobs.JobState;
import java.util.UUID;

/**
 * One job's change.
 *
 * @param kind {@code state} (it changed state) or {@code progress} (it reported progress)
 * @param jobId the job
 * @param state its state after the change
 * @param type its type
 * @param queue its queue
 * @param attempts its attempt count
 * @param progress progress percent, for {@code progress} events, else null
 * @param message progress message, for {@code progress} events, else null
 */
public record JobEvent(
    String kind,
    UUID jobId,
    JobState state,
    String type,
    String queue,
    int attempts,
    Integer progress,
    String message) {}
