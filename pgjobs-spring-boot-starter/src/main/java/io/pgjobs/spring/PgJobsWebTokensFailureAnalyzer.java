package io.pgjobs.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** "APPLICATION FAILED TO START" for {@link PgJobsWebTokensException}: the reason, never the tokens. */
final class PgJobsWebTokensFailureAnalyzer
    extends AbstractFailureAnalyzer<PgJobsWebTokensException> {
  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, PgJobsWebTokensException cause) {
    return new FailureAnalysis(
        "Invalid value for configuration property 'pgjobs.web.tokens' (not shown: it holds secrets): "
            + cause.reason(),
        "Give tokens of at least 16 characters without white space, each as read:TOKEN (may only read),"
            + " admin:TOKEN or TOKEN (may do everything), separated by commas.",
        cause);
  }
}
