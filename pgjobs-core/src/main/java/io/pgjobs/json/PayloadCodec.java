package io.pgjobs.json;

import io.pgjobs.InvalidJobException;
import io.pgjobs.InvalidPayloadException;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectReader;
import tools.jackson.databind.ObjectWriter;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.cfg.CoercionAction;
import tools.jackson.databind.cfg.CoercionInputShape;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.type.LogicalType;

/**
 * Turns payloads and outputs into JSON text and back. Never stores class names: the job type's name says
 * which class a payload is read into. Unknown properties are ignored when a worker reads a payload, so
 * one written by a newer version of a producer still runs on an older worker; a payload given by type
 * name at enqueue time is read strictly instead ({@link #decodeStrict}).
 */
public final class PayloadCodec {
  /**
   * The mapper pgjobs uses when the application gives none. It fails on objects with no properties
   * (Jackson 3 would write them as {@code {}}, silently losing a payload's data); empty records and maps
   * are still written as {@code {}}.
   */
  public static final JsonMapper DEFAULT_MAPPER = JsonMapper.builder()
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
      .build();

  private final JsonMapper mapper;
  /**
   * A reader and a writer per payload class, built once: {@code mapper.readValue(json, Class)} resolves
   * the class's type on every call, which is the larger part of decoding a small payload.
   */
  private final ConcurrentHashMap<Class<?>, ObjectReader> readers = new ConcurrentHashMap<>();

  private final ConcurrentHashMap<Class<?>, ObjectWriter> writers = new ConcurrentHashMap<>();

  /**
   * The mapper for {@link #decodeStrict}: {@code mapper} with unknown members refused and no coercion
   * between JSON types ({@code "3"} is not an integer, {@code 3} not a string, {@code 1.5} not an
   * integer), so a payload is checked against its class's JSON shape as the API's own members are.
   */
  private final JsonMapper strict;

  private final ConcurrentHashMap<Class<?>, ObjectReader> strictReaders = new ConcurrentHashMap<>();

  /** A codec over {@code mapper}. */
  public PayloadCodec(JsonMapper mapper) {
    this.mapper = mapper;
    this.strict = mapper
        .rebuild()
        .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .withCoercionConfig(LogicalType.Integer, c -> {
          c.setCoercion(CoercionInputShape.String, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Float, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        })
        .withCoercionConfig(LogicalType.Float, c -> {
          c.setCoercion(CoercionInputShape.String, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        })
        .withCoercionConfig(LogicalType.Boolean, c -> {
          c.setCoercion(CoercionInputShape.String, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail);
        })
        .withCoercionConfig(LogicalType.Textual, c -> {
          c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Float, CoercionAction.Fail);
          c.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        })
        .build();
  }

  /** The underlying mapper. */
  public JsonMapper mapper() {
    return mapper;
  }

  /**
   * Writes a payload as JSON text.
   *
   * Any JSON value is allowed (an object is usual; {@code JobType<String>} stores a string).
   *
   * @throws InvalidJobException if it is null, or Jackson cannot serialise it (including a bean with no
   *     properties, which would otherwise be stored as an empty object and lose its data)
   */
  public String encodePayload(Object payload) {
    if (payload == null) {
      throw new InvalidJobException(
          "payload", "is required (use an empty record or Map for no data)");
    }
    try {
      if (payload instanceof JsonNode node) {
        return mapper.writeValueAsString(node);
      }
      return writers
          .computeIfAbsent(payload.getClass(), mapper::writerFor)
          .writeValueAsString(payload);
    } catch (JacksonException e) {
      throw new InvalidJobException(
          "payload",
          "cannot be written as JSON (" + payload.getClass().getName() + "): "
              + e.getOriginalMessage(),
          e);
    }
  }

  /** Writes a handler's output (null stays null). */
  public String encodeOutput(Object output) {
    if (output == null) {
      return null;
    }
    return mapper.writeValueAsString(output);
  }

  /** Reads a payload into the type's class. */
  public <P> P decode(String json, Class<P> type) {
    if (type == JsonNode.class || type == Object.class) {
      return type.cast(mapper.readTree(json));
    }
    @SuppressWarnings("unchecked") // the reader was made for exactly this class
    P value = (P) readers.computeIfAbsent(type, mapper::readerFor).readValue(json);
    return value;
  }

  /**
   * Builds the reader {@link #decode} will use for {@code type} now rather than at its first payload:
   * Jackson looks the class over and builds its deserializer (milliseconds, cold), which a worker does at
   * start instead of in its first job's pickup. Never throws: a class Jackson cannot read is reported with
   * its first payload, as before (the attempt fails as {@code invalid_payload}).
   */
  public void prepare(Class<?> type) {
    if (type == JsonNode.class || type == Object.class) {
      return;
    }
    try {
      readers.computeIfAbsent(type, mapper::readerFor);
    } catch (RuntimeException e) {
      // Nothing cached: decode builds the reader again and reports the problem with the first
      // payload.
    }
  }

  /**
   * Reads a payload given by name (an API request) into the type's class, strictly: unlike
   * {@link #decode}, a member the class does not have is an error, since here it is a caller's typo
   * rather than a newer producer's addition. Problems are worded in JSON terms (which member, what
   * it was, what is allowed), never with Java class names.
   *
   * @throws InvalidPayloadException ({@link InvalidPayloadException#malformed()}) if the JSON does not fit
   */
  public <P> P decodeStrict(String json, Class<P> type, String typeName) {
    if (type == JsonNode.class || type == Object.class) {
      return type.cast(mapper.readTree(json));
    }
    try {
      @SuppressWarnings("unchecked") // the reader was made for exactly this class
      P value = (P) strictReaders.computeIfAbsent(type, strict::readerFor).readValue(json);
      return value;
    } catch (JacksonException e) {
      throw new InvalidPayloadException(typeName, List.of(JsonShapeProblems.of(e)), true);
    }
  }

  /** Parses JSON text into a tree (null stays null). */
  public JsonNode tree(String json) {
    return json == null ? null : mapper.readTree(json);
  }

  /** Writes any value as JSON text. */
  public String write(Object value) {
    return mapper.writeValueAsString(value);
  }
}
