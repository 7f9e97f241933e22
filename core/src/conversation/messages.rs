//! Projected conversations from the message lists harnesses keep: the same
//! rule as DSH projection (only user and assistant text reaches the prompt;
//! the text blocks of one message are joined with `"\n"`; a message without
//! text is left out).

use serde_json::Value;

use super::ConversationItem;
use crate::projection::Role;

/// The text of a message's `content`: a string, `null`, or an array of
/// parts of which those whose `type` is in `text_types` and whose `text` is
/// a string count, joined with `"\n"`. Any other part is dropped.
fn content_text(content: Option<&Value>, text_types: &[&str], at: usize) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str).is_some_and(|t| text_types.contains(&t)))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Ok(texts.join("\n"))
        }
        Some(_) => Err(format!("message {at}: `content` must be a string, null or an array of parts")),
    }
}

fn role_of(message: &Value, at: usize) -> Result<Option<Role>, String> {
    let obj = message.as_object().ok_or_else(|| format!("message {at} is not an object"))?;
    Ok(match obj.get("role").and_then(Value::as_str) {
        Some("user") => Some(Role::User),
        Some("assistant") => Some(Role::Assistant),
        _ => None,
    })
}

fn collect(
    messages: &Value,
    text_types: &[&str],
    keep: impl Fn(&Value) -> bool,
) -> Result<Vec<ConversationItem>, String> {
    let list = messages.as_array().ok_or("the messages must be an array")?;
    let mut items = Vec::new();
    for (at, message) in list.iter().enumerate() {
        let Some(role) = role_of(message, at)? else { continue };
        if !keep(message) {
            continue;
        }
        let text = content_text(message.get("content"), text_types, at)?;
        if !text.is_empty() {
            items.push(ConversationItem::new(role, text));
        }
    }
    Ok(items)
}

/// OpenAI-style messages, from the Chat Completions or the Responses API:
/// `{"role": "user"|"assistant"|"system"|"developer"|"tool", "content": string
/// | null | [{"type": "text"|"input_text"|"output_text", "text"}, …]}`.
/// User and assistant text is kept; system, developer and tool messages,
/// `tool_calls`, refusals, images and Responses items that are not
/// messages (`function_call`, `reasoning`, …) are dropped. An element that
/// is not an object, or a `content` of another type, is an error.
pub fn from_openai_messages(messages: &Value) -> Result<Vec<ConversationItem>, String> {
    collect(messages, &["text", "input_text", "output_text"], |m| {
        m.get("type").and_then(Value::as_str).is_none_or(|t| t == "message")
    })
}

/// Anthropic-style messages: `{"role": "user"|"assistant", "content": string
/// | [{"type": "text", "text"} | {"type": "thinking"} | {"type": "tool_use"} |
/// {"type": "tool_result"} | …]}`. Only `text` blocks are kept: thinking,
/// tool use and tool results, images and documents are dropped, so a user
/// message that only carries tool results is left out.
pub fn from_anthropic_messages(messages: &Value) -> Result<Vec<ConversationItem>, String> {
    collect(messages, &["text"], |_| true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(items: &[ConversationItem]) -> Vec<(&str, &str)> {
        items.iter().map(|i| (i.role.as_str(), i.text.as_str())).collect()
    }

    #[test]
    fn openai_keeps_user_and_assistant_text_only() {
        let messages = json!([
            {"role": "system", "content": "You are helpful."},
            {"role": "developer", "content": "secret rules"},
            {"role": "user", "content": "Fix <b>the</b> bug"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "tool output"},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}, {"type": "refusal", "refusal": "no"},
                                              {"type": "text", "text": "Twice."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"},
                                                             {"type": "input_image", "image_url": "x"}]},
            {"type": "function_call", "name": "f", "arguments": "{}"},
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "bye"}]},
        ]);
        let items = from_openai_messages(&messages).unwrap();
        assert_eq!(
            texts(&items),
            vec![
                ("user", "Fix <b>the</b> bug"),
                ("assistant", "Done.\nTwice."),
                ("user", "thanks"),
                ("assistant", "bye")
            ]
        );
        assert!(items.iter().all(|i| !i.checkpoint));
    }

    #[test]
    fn anthropic_keeps_text_blocks_only() {
        let messages = json!([
            {"role": "user", "content": "plan it"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hidden", "signature": "s"},
                {"type": "text", "text": "First,"},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},
                {"type": "text", "text": "then."}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a b c"}]},
            {"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "and this"}]},
        ]);
        let items = from_anthropic_messages(&messages).unwrap();
        assert_eq!(texts(&items), vec![("user", "plan it"), ("assistant", "First,\nthen."), ("user", "and this")]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        assert!(from_openai_messages(&json!({"role": "user"})).unwrap_err().contains("array"));
        assert_eq!(from_anthropic_messages(&json!(["hi"])).unwrap_err(), "message 0 is not an object");
        let err = from_openai_messages(&json!([{"role": "user", "content": 5}])).unwrap_err();
        assert!(err.contains("message 0") && err.contains("content"), "{err}");
        // A message of a role that is dropped is not examined further.
        assert!(from_openai_messages(&json!([{"role": "tool", "content": 5}])).unwrap().is_empty());
    }
}
