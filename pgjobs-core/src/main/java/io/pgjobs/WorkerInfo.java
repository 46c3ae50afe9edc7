package io.pgjobs;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A registered worker process.
 *
 * @param id worker id ({@code host:pid:random} unless configured)
 * @param host host name
 * @param pid process id
 * @param queues queues it serves, with their concurrency
 * @param jobTypes the job types it can run
 * @param startedAt when it registered
 * @param lastHeartbeat its latest heartbeat
 * @param runningJobs jobs it is running now
 */
public record WorkerInfo(
    String id,
    String host,
    long pid,
    Map<String, Integer> queues,
    List<String> jobTypes,
    Instant startedAt,
    Instant lastHeartbeat,
    long runningJobs,
    int stuckLanes) {}
