/**
 * Running pgjobs on a replicated PostgreSQL: {@link io.pgjobs.replication.DatabaseRole} (is the server a
 * read-only standby?) and {@link io.pgjobs.replication.ReplicationCheck} (can a failover lose acknowledged
 * commits?). See docs/operations.md, "High availability", and docs/guarantees.md, "Failover".
 */
package io.pgjobs.replication;
