package io.pgjobs.spring;

/**
 * {@code pgjobs.web.tokens} holds a token the API refuses. Unlike Spring's
 * {@code InvalidConfigurationPropertyValueException}, whose failure analysis prints the property's value,
 * {@link PgJobsWebTokensFailureAnalyzer} reports it without the value: tokens are secrets.
 */
final class PgJobsWebTokensException extends RuntimeException {
  PgJobsWebTokensException(String reason, Throwable cause) {
    super("invalid pgjobs.web.tokens (value not shown): " + reason, cause);
  }

  String reason() {
    return getMessage().substring(getMessage().indexOf(": ") + 2);
  }
}
