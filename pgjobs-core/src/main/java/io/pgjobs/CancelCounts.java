package io.pgjobs;

/**
 * What {@link JobClient#cancelAll} did.
 *
 * @param cancelled waiting jobs cancelled at once
 * @param pendingOnWorker running jobs whose workers were asked to stop them
 */
public record CancelCounts(long cancelled, long pendingOnWorker) {}
