/**
 * pgjobs' core: the one place that says which packages are its API. An exported package is API (its
 * public types are kept compatible); a package not exported is internal, whatever its types' modifiers,
 * and may change in any release. The other modules of this project use core on the class path,
 * where the module system does not hold them to it: {@code io.pgjobs.boundaries.ModuleBoundariesTest}
 * (pgjobs-core's tests) reads this file and fails when another module uses a package it does not export.
 */
module io.pgjobs.core {
  exports io.pgjobs;
  exports io.pgjobs.config;
  exports io.pgjobs.events;
  exports io.pgjobs.maintenance;
  exports io.pgjobs.metrics;
  exports io.pgjobs.recurring;
  exports io.pgjobs.replication;
  exports io.pgjobs.schema;
  // The background loops' one lifecycle: the server's event hub is such a loop too.
  exports io.pgjobs.service;
  exports io.pgjobs.json;
  exports io.pgjobs.worker;
  // Durable step workflows: WorkflowType, WorkflowContext, and the runner a registration wraps.
  exports io.pgjobs.workflow;

  requires transitive java.sql;
  requires transitive java.net.http;
  requires org.postgresql.jdbc;
  requires com.cronutils;
  requires flyway.core;
  requires tools.jackson.databind;
  requires org.slf4j;
  requires static micrometer.core;
  requires static com.zaxxer.hikari;
  requires static io.opentelemetry.api;
  requires static io.opentelemetry.context;

  uses io.pgjobs.worker.JobRegistrations;
}
