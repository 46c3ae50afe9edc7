/**
 * The demo job kinds built into the {@code pgjobs} command: {@link io.pgjobs.cli.demo.DemoJobs} lists
 * them; one class per kind holds its payload record, job type, validator and handler.
 */
package io.pgjobs.cli.demo;
