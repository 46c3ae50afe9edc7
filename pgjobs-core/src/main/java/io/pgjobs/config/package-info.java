/** Configuration values: parsing and validation shared by the builders, the CLI and the server. Public. */
package io.pgjobs.config;
