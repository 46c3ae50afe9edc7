/**
 * The benchmark workloads of DESIGN.md (W1 bulk enqueue, W2 single enqueues, W3 drain, W4 latency), each
 * run against pgjobs and against a raw-SQL reference doing the same work with minimal hand-written SQL,
 * so every figure is also a ratio to what PostgreSQL itself does on the same machine at the same moment.
 */
package io.pgjobs.bench;
