package io.pgjobs.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine;

/** {@code pgjobs --version}: the build's version (from the Maven project) and the Java runtime. */
final class VersionProvider implements CommandLine.IVersionProvider {
  /** The pgjobs version, or {@code unknown}. */
  static String version() {
    Properties props = new Properties();
    try (InputStream in = VersionProvider.class.getResourceAsStream("version.properties")) {
      if (in != null) {
        props.load(in);
      }
    } catch (IOException e) {
      // fall through to "unknown"
    }
    return props.getProperty("version", "unknown");
  }

  @Override
  public String[] getVersion() {
    return new String[] {
      "pgjobs " + version(),
      "Java " + Runtime.version() + " (" + System.getProperty("java.vendor", "unknown vendor") + ")"
    };
  }
}
