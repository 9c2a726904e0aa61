//! Results: a table for people, JSON for machines, an SVG plot.

use serde_json::{Map, Value, json};

/// A curve over time for the plot.
pub struct Series {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub points: Vec<(f64, f64)>,
}

/// One scenario's figures, in the order they are reported.
pub struct Outcome {
    pub scenario: &'static str,
    pub figures: Vec<(String, Value, String)>,
    pub series: Option<Series>,
    /// Per-second figures, written to the JSON only.
    pub timeline: Option<Value>,
}

impl Outcome {
    pub fn new(scenario: &'static str) -> Self {
        Outcome {
            scenario,
            figures: Vec::new(),
            series: None,
            timeline: None,
        }
    }

    /// Adds a figure: JSON key, value, unit for the table.
    pub fn add(&mut self, key: &str, value: impl Into<Value>, unit: &str) {
        self.figures
            .push((key.to_owned(), value.into(), unit.to_owned()));
    }

    /// A numeric figure added earlier.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(k, ..)| k == key)
            .and_then(|(_, v, _)| v.as_f64())
    }

    pub fn table(&self) -> String {
        let width = self
            .figures
            .iter()
            .map(|(k, ..)| k.len())
            .max()
            .unwrap_or(0);
        let mut out = format!("scenario: {}\n", self.scenario);
        for (k, v, unit) in &self.figures {
            let shown = match v {
                Value::Number(n) if n.is_f64() => format!("{:.3}", n.as_f64().unwrap_or_default()),
                other => other.to_string(),
            };
            out.push_str(&format!("  {k:<width$}  {shown} {unit}\n"));
        }
        out
    }

    pub fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("scenario".into(), json!(self.scenario));
        for (k, v, _) in &self.figures {
            m.insert(k.clone(), v.clone());
        }
        if let Some(t) = &self.timeline {
            m.insert("timeline".into(), t.clone());
        }
        Value::Object(m)
    }
}

/// A line chart of one series as a standalone SVG.
pub fn svg(s: &Series) -> String {
    let (w, h, left, bottom, top, right) = (720.0, 400.0, 70.0, 50.0, 40.0, 20.0);
    let max_x = s
        .points
        .iter()
        .map(|p| p.0)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let max_y = s
        .points
        .iter()
        .map(|p| p.1)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let x = |v: f64| left + v / max_x * (w - left - right);
    let y = |v: f64| h - bottom - v / max_y * (h - bottom - top);
    let path: Vec<String> = s
        .points
        .iter()
        .map(|(a, b)| format!("{:.1},{:.1}", x(*a), y(*b)))
        .collect();
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        w / 2.0,
        escape(&s.title)
    );
    for i in 0..=4 {
        let fx = max_x * i as f64 / 4.0;
        let fy = max_y * i as f64 / 4.0;
        out.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
            x(fx),
            top,
            h - bottom,
            h - bottom + 16.0,
            short(fx)
        ));
        out.push_str(&format!(
            "<line x1=\"{0}\" y1=\"{1:.1}\" x2=\"{2}\" y2=\"{1:.1}\" stroke=\"#ddd\"/><text x=\"{3}\" y=\"{4:.1}\" text-anchor=\"end\">{5}</text>\n",
            left,
            y(fy),
            w - right,
            left - 6.0,
            y(fy) + 4.0,
            short(fy)
        ));
    }
    out.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
        (w + left) / 2.0,
        h - 12.0,
        escape(&s.x_label),
        h / 2.0,
        h / 2.0,
        escape(&s.y_label)
    ));
    out.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>\n</svg>\n",
        path.join(" ")
    ));
    out
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
