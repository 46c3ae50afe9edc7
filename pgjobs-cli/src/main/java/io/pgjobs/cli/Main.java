package io.pgjobs.cli;

import java.io.Console;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** The {@code pgjobs} program: runs {@link PgJobsCommand} on the process's streams and exits with its code. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.setProperty("java.awt.headless", "true"); // resize_image draws off-screen
    Map<String, String> env = System.getenv();
    Logging.configure(Logging.fromEnvironment(env), Logging.levelFromEnvironment(env));
    PrintWriter out =
        new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    PrintWriter err =
        new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
    int code = PgJobsCommand.execute(
        args,
        out,
        err,
        env,
        settings -> Logging.configure(settings.logFormat(), settings.logLevel()),
        isTerminal());
    System.exit(code);
  }

  /** True when stdout is a terminal (Console.isTerminal on Java 22+, else a console being present). */
  private static boolean isTerminal() {
    Console console = System.console();
    if (console == null) {
      return false;
    }
    try {
      Method isTerminal = Console.class.getMethod("isTerminal");
      return (Boolean) isTerminal.invoke(console);
    } catch (ReflectiveOperationException e) {
      return true;
    }
  }
}
