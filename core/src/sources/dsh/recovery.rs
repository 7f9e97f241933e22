//! Cold-load crash recovery: the synthetic events DSH appends when a log
//! ends inside an unfinished turn.
//!
//! When the kept events end inside an open turn, a cold load closes it:
//! first a `tool/result` for every tool call of the turn left without one,
//! then `step/end` if a step is open, then `turn/end` with reason
//! `interrupted`. The closers take the seqs after the last stored event.
//! They are never surface events here and are never projected (tool
//! results are not), but they do count in `capturedThroughSeq`.

use serde::Deserialize;

/// One synthetic closer event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closer {
    /// A result for the open tool call with this id.
    ToolResult(String),
    /// `step/end` of the open step.
    StepEnd,
    /// `turn/end` with reason `interrupted`.
    TurnEnd,
}

impl Closer {
    /// The event type of the closer.
    pub fn event_type(&self) -> &'static str {
        match self {
            Closer::ToolResult(_) => "tool/result",
            Closer::StepEnd => "step/end",
            Closer::TurnEnd => "turn/end",
        }
    }
}

/// Tracks the open turn, step and tool calls while a log is read.
#[derive(Debug, Default)]
pub struct TurnTracker {
    turn_open: bool,
    step_open: bool,
    open_calls: Vec<String>,
}

impl TurnTracker {
    /// A tracker with nothing open.
    pub fn new() -> Self {
        TurnTracker::default()
    }

    /// Observes one stored event of type `kind` (its line is read only for
    /// tool calls and results).
    pub fn observe(&mut self, kind: &str, line: &[u8]) {
        match kind {
            "turn/start" => {
                self.turn_open = true;
                self.step_open = false;
                self.open_calls.clear();
            }
            "turn/end" => {
                self.turn_open = false;
                self.step_open = false;
                self.open_calls.clear();
            }
            "step/start" => self.step_open = true,
            "step/end" => self.step_open = false,
            "tool/call" => {
                if let Some(id) = tool_call_id(line) {
                    self.open_calls.push(id);
                }
            }
            // A result can only close a call that is open: with none open
            // the (often large) line is not read at all.
            "tool/result" if !self.open_calls.is_empty() => {
                if let Some(id) = tool_result_call_id(line) {
                    self.open_calls.retain(|c| *c != id);
                }
            }
            _ => {}
        }
    }

    /// The closers a cold load appends, in order (empty when no turn is open).
    pub fn closers(&self) -> Vec<Closer> {
        if !self.turn_open {
            return Vec::new();
        }
        let mut out: Vec<Closer> = self.open_calls.iter().cloned().map(Closer::ToolResult).collect();
        if self.step_open {
            out.push(Closer::StepEnd);
        }
        out.push(Closer::TurnEnd);
        out
    }
}

/// The `callId` of a `tool/call` event (`data.callId`), if readable.
pub fn tool_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: CallData,
    }
    #[derive(Deserialize)]
    struct CallData {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.call_id)
}

/// The call id a `tool/result` event answers (`data.message.source.callId`),
/// if readable.
pub fn tool_result_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: ResultData,
    }
    #[derive(Deserialize)]
    struct ResultData {
        message: Message,
    }
    #[derive(Deserialize)]
    struct Message {
        source: Source,
    }
    #[derive(Deserialize)]
    struct Source {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.message.source.call_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_an_open_turn() {
        let mut t = TurnTracker::new();
        assert!(t.closers().is_empty());
        t.observe("turn/start", b"{}");
        t.observe("step/start", b"{}");
        assert_eq!(t.closers(), vec![Closer::StepEnd, Closer::TurnEnd]);
        t.observe("tool/call", br#"{"type":"tool/call","data":{"callId":"a"}}"#);
        t.observe("tool/call", br#"{"type":"tool/call","data":{"callId":"b"}}"#);
        t.observe("tool/result", br#"{"type":"tool/result","data":{"message":{"source":{"callId":"a"}}}}"#);
        assert_eq!(t.closers(), vec![Closer::ToolResult("b".into()), Closer::StepEnd, Closer::TurnEnd]);
        t.observe("step/end", b"{}");
        t.observe("turn/end", b"{}");
        assert!(t.closers().is_empty());
    }

    #[test]
    fn call_ids() {
        assert_eq!(tool_call_id(br#"{"type":"tool/call","data":{"callId":"c1"}}"#).as_deref(), Some("c1"));
        let result = br#"{"type":"tool/result","data":{"message":{"source":{"kind":"tool","callId":"c1"}}}}"#;
        assert_eq!(tool_result_call_id(result).as_deref(), Some("c1"));
    }
}
