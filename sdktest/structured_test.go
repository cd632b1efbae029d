package sdktest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// TestStructuredOutputEveryDialect: a response schema asked in the
// Responses dialect (text.format), the Anthropic dialect
// (output_config.format) and the Gemini dialect (responseMimeType +
// responseJsonSchema) reaches every upstream type as its own mechanism,
// and the JSON comes back in the dialect's place for text. DeepSeek,
// which has no schema mechanism, may refuse with a 400 that names the
// field instead.
func TestStructuredOutputEveryDialect(t *testing.T) {
	e := newEnv(t, false)
	oc, ac, gc := e.openai(), e.anthropic(), e.genai(t)
	for _, u := range upstreams {
		t.Run(u.typ+"/responses", func(t *testing.T) {
			res, err := oc.Responses.New(ctx(t), responses.ResponseNewParams{Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris, as JSON.")},
				Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
					OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city_weather", Schema: cityWeather, Strict: openai.Bool(true)}}}})
			if refusedOrFail(t, u, "responses", err, "text.format") {
				checkWeatherJSON(t, "responses", res.OutputText())
			}
		})
		t.Run(u.typ+"/anthropic", func(t *testing.T) {
			params := anthropicParams(u.model, "Weather in Paris, as JSON.")
			params.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: cityWeather}}
			msg, err := ac.Messages.New(ctx(t), params)
			if refusedOrFail(t, u, "anthropic", err, "output_config") {
				if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.StopReason != "end_turn" {
					t.Fatalf("anthropic: the JSON must come back as one text block: %s", msg.RawJSON())
				}
				checkWeatherJSON(t, "anthropic", msg.Content[0].Text)
			}
		})
		t.Run(u.typ+"/gemini", func(t *testing.T) {
			gres, err := gc.Models.GenerateContent(ctx(t), u.model, genai.Text("Weather in Paris, as JSON."),
				&genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseJsonSchema: cityWeather})
			if refusedOrFail(t, u, "gemini", err, "response") {
				checkWeatherJSON(t, "gemini", gres.Text())
			}
		})
	}
}

// refusedOrFail reports whether err is nil (go on checking); a DeepSeek
// refusal naming field ends the check, any other error fails the test.
func refusedOrFail(t *testing.T, u upstream, dialect string, err error, field string) bool {
	t.Helper()
	if err == nil {
		return true
	}
	msg := err.Error()
	var oe *openai.Error
	if errors.As(err, &oe) {
		// The SDK's Error() holds the status, not the body's message.
		msg = fmt.Sprintf("%d %s %s", oe.StatusCode, oe.Param, oe.Message)
	}
	if u.typ == "deepseek" && strings.Contains(msg, "400") && strings.Contains(msg, field) {
		return false
	}
	t.Fatalf("%s: %v", dialect, err)
	return false
}

func checkWeatherJSON(t *testing.T, dialect, text string) {
	t.Helper()
	var got struct {
		City         string `json:"city"`
		TemperatureC int    `json:"temperature_c"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.City != "Paris" || got.TemperatureC != 21 {
		t.Fatalf("%s: %q is not the JSON asked for (%v)", dialect, text, err)
	}
}
