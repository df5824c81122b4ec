// Record the spans the Vercel AI SDK (major 4, 5, 6 or 7) sends for one call with a tool, as OTLP/JSON.
// Run from a directory where that major and its OpenTelemetry packages are installed (see README.md):
//   node record.mjs <major> <out.json>
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";

const major = Number(process.argv[2]);
const out = process.argv[3];
const here = createRequire(`${process.cwd()}/`); // the packages of the directory it runs in, not of this file's
const load = (name) => import(here.resolve(name));

const ai = await load("ai");
const { trace, context } = await load("@opentelemetry/api");
const otel = await load("@opentelemetry/sdk-trace-base");
const resources = await load("@opentelemetry/resources");
const { AsyncLocalStorageContextManager } = await load("@opentelemetry/context-async-hooks");
const { JsonTraceSerializer } = await load("@opentelemetry/otlp-transformer");
const { z } = await load("zod");
const mocks = await load("ai/test");

const SYSTEM = "You answer weather questions.";
const QUESTION = "What is the weather in Paris?";
const ANSWER = "It is 18 degrees and cloudy in Paris.";
const CALL = { toolCallId: "call_fake_weather_1", toolName: "get_weather" };
const TOKENS = [[21, 9], [40, 11]]; // tests/support/fake_openai.py's USAGE

// the tracer provider (OpenTelemetry JS 1.x for majors 4 to 6, 2.x for 7)
const exporter = new otel.InMemorySpanExporter();
const attributes = { "service.name": "next-weather", "service.version": "1.0.0" };
let provider;
if (major >= 7) {
  provider = new otel.BasicTracerProvider({
    resource: resources.resourceFromAttributes(attributes),
    spanProcessors: [new otel.SimpleSpanProcessor(exporter)],
  });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const { OpenTelemetry } = await load("@ai-sdk/otel");
  ai.registerTelemetry(new OpenTelemetry());
} else {
  provider = new otel.BasicTracerProvider({ resource: new resources.Resource(attributes) });
  provider.addSpanProcessor(new otel.SimpleSpanProcessor(exporter));
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
}

// the mock model: a tool call, then the answer, in the model interface of the major
let calls = 0;
function usage([input, output]) {
  if (major >= 6) {
    return {
      inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: output, text: output, reasoning: 0 },
    };
  }
  return { inputTokens: input, outputTokens: output, totalTokens: input + output };
}
const finish = (reason) => (major >= 6 ? { unified: reason, raw: reason } : reason);
const weather = { city: "Paris", temperature_c: 18, sky: "cloudy" };
let model;
if (major === 4) {
  model = new mocks.MockLanguageModelV1({
    doGenerate: async () => {
      const first = calls++ === 0;
      const [promptTokens, completionTokens] = TOKENS[first ? 0 : 1];
      return {
        rawCall: { rawPrompt: null, rawSettings: {} },
        finishReason: first ? "tool-calls" : "stop",
        usage: { promptTokens, completionTokens },
        ...(first
          ? { toolCalls: [{ toolCallType: "function", ...CALL, args: JSON.stringify({ city: "Paris" }) }] }
          : { text: ANSWER }),
      };
    },
  });
} else {
  const Mock = { 5: mocks.MockLanguageModelV2, 6: mocks.MockLanguageModelV3 }[major] ?? mocks.MockLanguageModelV4;
  model = new Mock({
    doStream: async () => {
      const first = calls++ === 0;
      const chunks = first
        ? [{ type: "tool-call", ...CALL, input: JSON.stringify({ city: "Paris" }) }]
        : [{ type: "text-start", id: "t1" }, { type: "text-delta", id: "t1", delta: ANSWER }, { type: "text-end", id: "t1" }];
      chunks.push({ type: "finish", finishReason: finish(first ? "tool-calls" : "stop"), usage: usage(TOKENS[first ? 0 : 1]) });
      return { stream: mocks.simulateReadableStream({ chunks }) };
    },
  });
}

// one request: an HTTP span, the call below it
const telemetry = { isEnabled: true, functionId: "weather-chat", metadata: { sessionId: `chat-${40 + major - 3}` } };
await trace.getTracer("next").startActiveSpan("POST /api/chat", async (root) => {
  if (major === 4) {
    await ai.generateText({
      model, system: SYSTEM, prompt: QUESTION, maxSteps: 5, experimental_telemetry: telemetry,
      tools: { get_weather: ai.tool({ description: "Weather of a city.", parameters: z.object({ city: z.string() }), execute: async () => weather }) },
    });
  } else {
    const result = ai.streamText({
      model, system: SYSTEM, messages: [{ role: "user", content: QUESTION }], stopWhen: ai.stepCountIs(5),
      ...(major >= 7 ? { telemetry: { functionId: "weather-chat" } } : { experimental_telemetry: telemetry }),
      tools: { get_weather: ai.tool({ description: "Weather of a city.", inputSchema: z.object({ city: z.string() }), execute: async () => weather }) },
    });
    await result.consumeStream();
  }
  root.end();
});
await provider.forceFlush();
writeFileSync(out, new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())));
