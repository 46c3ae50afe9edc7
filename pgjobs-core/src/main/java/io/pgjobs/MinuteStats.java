package io.pgjobs;

import java.time.Instant;

/**
 * Jobs that finished within one minute, for one type, queue and final state.
 *
 * @param minute start of the minute
 * @param type job type
 * @param queue queue
 * @param state succeeded, failed or cancelled
 * @param count how many
 */
public record MinuteStats(Instant minute, String type, String queue, JobState state, long count) {}
