package io.pgjobs.cli.demo;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.worker.JobWorker;
import java.text.BreakIterator;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The {@code summarize_text} demo kind: an extractive summary. The text is split into sentences
 * ({@link BreakIterator}); every word that is not a common English stop word counts towards its
 * frequency in the whole text; a sentence scores the sum of its words' frequencies (each divided by the
 * highest frequency), divided by the square root of its word count so that long sentences do not win
 * by length alone. The {@code sentences} best-scoring sentences are kept, in their original order
 * (ties go to the earlier sentence).
 *
 * <p>Payload {@code {"text": "...", "sentences": 3}}; output {@code {"summary": "..."}}. Progress is
 * reported while sentences are scored, and a cancelled job stops between sentences.
 */
public final class SummarizeTextJob {
  /**
   * The payload.
   *
   * @param text the text, at most {@value #MAX_TEXT} characters
   * @param sentences how many sentences to keep, 1 to {@value #MAX_SENTENCES}
   */
  public record SummarizeText(String text, Integer sentences) {}

  /** Longest text: {@value} characters. */
  public static final int MAX_TEXT = 1_000_000;
  /** Most sentences kept: {@value}. */
  public static final int MAX_SENTENCES = 100;

  /** The job type, with payload validation. */
  public static final JobType<SummarizeText> TYPE =
      JobType.of("summarize_text", SummarizeText.class).withValidator(SummarizeTextJob::validate);

  private static final Pattern WORD = Pattern.compile("[\\p{L}\\p{N}]+(?:'[\\p{L}]+)?");
  private static final Set<String> STOP_WORDS = Set.of(
      "a",
      "about",
      "above",
      "after",
      "again",
      "against",
      "all",
      "also",
      "am",
      "an",
      "and",
      "any",
      "are",
      "as",
      "at",
      "be",
      "because",
      "been",
      "before",
      "being",
      "below",
      "between",
      "both",
      "but",
      "by",
      "can",
      "could",
      "did",
      "do",
      "does",
      "doing",
      "down",
      "during",
      "each",
      "few",
      "for",
      "from",
      "further",
      "had",
      "has",
      "have",
      "having",
      "he",
      "her",
      "here",
      "hers",
      "herself",
      "him",
      "himself",
      "his",
      "how",
      "i",
      "if",
      "in",
      "into",
      "is",
      "it",
      "it's",
      "its",
      "itself",
      "just",
      "me",
      "more",
      "most",
      "my",
      "myself",
      "no",
      "nor",
      "not",
      "now",
      "of",
      "off",
      "on",
      "once",
      "only",
      "or",
      "other",
      "our",
      "ours",
      "ourselves",
      "out",
      "over",
      "own",
      "same",
      "she",
      "should",
      "so",
      "some",
      "such",
      "than",
      "that",
      "the",
      "their",
      "theirs",
      "them",
      "themselves",
      "then",
      "there",
      "these",
      "they",
      "this",
      "those",
      "through",
      "to",
      "too",
      "under",
      "until",
      "up",
      "very",
      "was",
      "we",
      "were",
      "what",
      "when",
      "where",
      "which",
      "while",
      "who",
      "whom",
      "why",
      "will",
      "with",
      "would",
      "you",
      "your",
      "yours",
      "yourself",
      "yourselves");

  /** The type with its handler. */
  public JobWorker.Registration<SummarizeText> registration() {
    return new JobWorker.Registration<>(TYPE, this::run);
  }

  /** Checks the payload: a non-blank text of at most {@value #MAX_TEXT} characters, sentences 1–100. */
  public static List<FieldProblem> validate(SummarizeText job) {
    if (job == null) {
      return PayloadProblems.missingPayload("text and sentences");
    }
    PayloadProblems problems = new PayloadProblems();
    problems.text("text", job.text(), MAX_TEXT, false);
    problems.range("sentences", job.sentences(), 1, MAX_SENTENCES);
    return problems.list();
  }

  /** Summarises the text. */
  Object run(JobContext ctx, SummarizeText job) {
    if (!validate(job).isEmpty()) {
      throw new DiscardJobException("invalid payload: " + validate(job));
    }
    ctx.progress(0, "splitting into sentences");
    List<String> sentences = sentences(job.text());
    ctx.progress(10, sentences.size() + " sentences");
    List<List<String>> words = new ArrayList<>(sentences.size());
    Map<String, Integer> frequency = new HashMap<>();
    for (String sentence : sentences) {
      List<String> content = contentWords(sentence);
      words.add(content);
      content.forEach(w -> frequency.merge(w, 1, Integer::sum));
    }
    double max = frequency.values().stream().mapToInt(Integer::intValue).max().orElse(1);
    double[] scores = new double[sentences.size()];
    int lastPercent = 10;
    for (int i = 0; i < sentences.size(); i++) {
      if (ctx.isCancelled()) {
        throw new IllegalStateException(
            "cancelled after scoring " + i + " of " + sentences.size() + " sentences");
      }
      List<String> content = words.get(i);
      double sum = 0;
      for (String w : content) {
        sum += frequency.get(w) / max;
      }
      scores[i] = content.isEmpty() ? 0 : sum / Math.sqrt(content.size());
      int percent = 10 + (int) (80L * (i + 1) / sentences.size());
      if (percent != lastPercent) {
        ctx.progress(percent, "scored " + (i + 1) + " of " + sentences.size() + " sentences");
        lastPercent = percent;
      }
    }
    String summary = summary(sentences, scores, job.sentences());
    ctx.progress(
        100,
        "kept " + Math.min(job.sentences(), sentences.size()) + " of " + sentences.size()
            + " sentences");
    return Map.of("summary", summary);
  }

  /** The {@code keep} best sentences in their original order, joined by a space. */
  static String summary(List<String> sentences, double[] scores, int keep) {
    return IntStream.range(0, sentences.size())
        .boxed()
        .sorted(Comparator.<Integer>comparingDouble(i -> -scores[i]).thenComparingInt(i -> i))
        .limit(keep)
        .sorted()
        .map(sentences::get)
        .collect(Collectors.joining(" "));
  }

  /** The sentences of {@code text}, trimmed, empty ones dropped. */
  static List<String> sentences(String text) {
    BreakIterator it = BreakIterator.getSentenceInstance(Locale.ENGLISH);
    it.setText(text);
    List<String> out = new ArrayList<>();
    int start = it.first();
    for (int end = it.next(); end != BreakIterator.DONE; start = end, end = it.next()) {
      String sentence = text.substring(start, end).strip().replaceAll("\\s+", " ");
      if (!sentence.isEmpty()) {
        out.add(sentence);
      }
    }
    return out;
  }

  /** The lowercase words of a sentence that are not stop words. */
  static List<String> contentWords(String sentence) {
    List<String> out = new ArrayList<>();
    Matcher m = WORD.matcher(sentence.toLowerCase(Locale.ROOT));
    while (m.find()) {
      String w = m.group();
      if (w.length() > 1 && !STOP_WORDS.contains(w)) {
        out.add(w);
      }
    }
    return out;
  }
}
