/**
 * Configuration of the {@code pgjobs} command: {@link io.pgjobs.cli.config.Settings} resolves every
 * setting from flags, environment, config file and defaults, and validates it.
 */
package io.pgjobs.cli.config;
