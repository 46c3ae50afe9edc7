package io.pgjobs.server.api;

import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import java.lang.reflect.RecordComponent;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code /job-types}: the job types the server knows, with their defaults and a payload template, so a
 * client (the dashboard's enqueue form) can offer them.
 */
public final class JobTypesApi {

  /** Nested records deeper than this get {@code null} in a template. */
  private static final int MAX_TEMPLATE_DEPTH = 4;

  private final JobClient client;
  private final boolean acceptUnknownTypes;

  /** Serves {@code client}'s known types. */
  public JobTypesApi(JobClient client, boolean acceptUnknownTypes) {
    this.client = client;
    this.acceptUnknownTypes = acceptUnknownTypes;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.get(
        "/job-types",
        ctx -> Reply.ok(new JobTypeListView(
            client.knownTypes().values().stream()
                .sorted(Comparator.comparing(JobType::name))
                .map(JobTypesApi::view)
                .toList(),
            acceptUnknownTypes)));
  }

  private static JobTypeView view(JobType<?> type) {
    return new JobTypeView(
        type.name(),
        type.queue(),
        type.priority(),
        type.maxAttempts(),
        type.timeout().toMillis(),
        templateOf(type));
  }

  /**
   * What a client is offered as a starting point for a payload of {@code type}: its example
   * ({@link JobType#withExample}) if it has one, else {@link #template} of its payload class. Also the
   * input template of a workflow ({@code GET /workflow-types}), whose runs are jobs of its type.
   */
  static JsonNode templateOf(JobType<?> type) {
    return type.example()
        .<JsonNode>map(e -> io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER.valueToTree(e))
        .orElseGet(() -> template(type.payloadClass(), 0));
  }

  /**
   * A starting point for a payload: a record's components by name with an empty value of their type
   * ({@code ""}, {@code 0}, {@code false}, {@code []}, {@code {}}, nested records likewise); {@code {}}
   * for anything else.
   */
  static JsonNode template(Class<?> type, int depth) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    if (type == String.class
        || type == Character.class
        || type == char.class
        || CharSequence.class.isAssignableFrom(type)) {
      return f.stringNode("");
    } else if (type == boolean.class || type == Boolean.class) {
      return f.booleanNode(false);
    } else if (type.isPrimitive() || Number.class.isAssignableFrom(type)) {
      return f.numberNode(0);
    } else if (type.isArray() || Collection.class.isAssignableFrom(type)) {
      return f.arrayNode();
    } else if (type.isEnum() && type.getEnumConstants().length > 0) {
      return f.stringNode(((Enum<?>) type.getEnumConstants()[0]).name());
    } else if (type.isRecord() && depth < MAX_TEMPLATE_DEPTH) {
      ObjectNode object = f.objectNode();
      for (RecordComponent c : type.getRecordComponents()) {
        object.set(c.getName(), template(c.getType(), depth + 1));
      }
      return object;
    } else if (Map.class.isAssignableFrom(type)
        || type == Object.class
        || JsonNode.class.isAssignableFrom(type)) {
      return f.objectNode();
    }
    return depth == 0 ? f.objectNode() : f.nullNode();
  }

  /**
   * One job type.
   *
   * @param queue its default queue
   * @param priority its default priority
   * @param maxAttempts its default number of attempts
   * @param timeoutMs its default timeout per attempt
   * @param payloadTemplate an example payload with every member of the payload class and an empty value
   */
  public record JobTypeView(
      String name,
      String queue,
      int priority,
      int maxAttempts,
      long timeoutMs,
      JsonNode payloadTemplate) {}

  /**
   * The known types.
   *
   * @param acceptsUnknownTypes true when {@code POST /jobs} also takes types not listed here
   */
  public record JobTypeListView(List<JobTypeView> types, boolean acceptsUnknownTypes) {}
}
