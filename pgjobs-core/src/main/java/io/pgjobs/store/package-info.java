/**
 * INTERNAL. The only package that talks SQL. Each store exposes one method per operation, most of them a
 * single guarded statement, and keeps its statements, each a whole text block, in a class of its own:
 *
 * <ul>
 *   <li>{@link io.pgjobs.store.EnqueueStore} ({@code EnqueueSql}): inserting jobs, one, one with an
 *       idempotency key, or many by COPY, with their wake-up and event notifications;
 *   <li>{@link io.pgjobs.store.AdminStore} ({@code AdminSql}): reading, listing and counting jobs,
 *       queue overviews and statistics, cancel, retry, pause and resume;
 *   <li>{@link io.pgjobs.store.ExecutionStore} ({@code ExecutionSql}): the claim and every write to a
 *       running job, fenced by its claim token;
 *   <li>{@link io.pgjobs.store.WorkerStore} ({@code WorkerSql}): worker heartbeats, leases, rescue and
 *       pruning.
 * </ul>
 *
 * {@code JobSql} holds what they share (schema check, column lists, the notifications of inserted
 * rows, moves into finished_jobs); {@link io.pgjobs.store.Channels} names the LISTEN channels. Not part
 * of the public API.
 */
package io.pgjobs.store;
