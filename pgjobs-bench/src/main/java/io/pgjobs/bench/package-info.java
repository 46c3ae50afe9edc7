/**
 * The benchmark workloads of DESIGN.md (W1 bulk enqueue, W2 single enqueues, W3 drain, W4 latency), each
 * run against pgjobs and against a raw-SQL reference doing the same work with minimal hand-written SQL,
 * so every figure is also a ratio to what PostgreSQL itself does on the same machine at the same moment.
 * W3's pgjobs workers run in their own JVMs ({@link io.pgjobs.bench.BenchWorkerMain}), one and then two
 * processes, so the peak RSS is the worker's. W3S (run only when named) repeats the one-process drain with
 * 5,000,000 scheduled and 1,000,000 finished jobs in the tables and compares it to the empty-table drain.
 * W5 (run only when named, {@link io.pgjobs.bench.W5Options}) is sustained load: a producer process
 * ({@link io.pgjobs.bench.W5ProducerMain}) offering a fixed rate to a worker process
 * ({@link io.pgjobs.bench.W5WorkerMain}) through phases with and without an idle transaction, pickup
 * percentiles per window, and a peak probe.
 */
package io.pgjobs.bench;
