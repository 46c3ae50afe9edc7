package io.pgjobs.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One in-process run of the {@code pgjobs} command with captured output.
 *
 * @param exitCode the exit code
 * @param out what it printed to stdout
 * @param err what it printed to stderr
 */
record CommandRun(int exitCode, String out, String err) {
  private static final Pattern ID =
      Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

  /** Runs {@code args} with {@code environment} as the process environment. */
  static CommandRun of(Map<String, String> environment, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = PgJobsCommand.execute(args, new PrintWriter(out), new PrintWriter(err), environment);
    return new CommandRun(code, out.toString(), err.toString());
  }

  /** The first job id printed on stdout. */
  UUID firstId() {
    Matcher m = ID.matcher(out);
    if (!m.find()) {
      throw new AssertionError("no job id in output: " + out + err);
    }
    return UUID.fromString(m.group());
  }

  @Override
  public String toString() {
    return "exit " + exitCode + "\n--- out:\n" + out + "--- err:\n" + err;
  }
}
