package io.pgjobs.cli.config;

/**
 * A setting had a value that is not allowed. The message names where the value came from (flag,
 * environment variable or config file), what was wrong and what is allowed. The command exits with 2.
 */
public final class InvalidSettingException extends RuntimeException {
  private final String setting;
  private final Settings.Source source;

  InvalidSettingException(String setting, Settings.Source source, String message) {
    super(message);
    this.setting = setting;
    this.source = source;
  }

  InvalidSettingException(String setting, Settings.Source source, String message, Throwable cause) {
    super(message, cause);
    this.setting = setting;
    this.source = source;
  }

  /** The setting's name. */
  public String setting() {
    return setting;
  }

  /** Where the bad value came from. */
  public Settings.Source source() {
    return source;
  }
}
