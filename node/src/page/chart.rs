//! Charts drawn on the server as inline SVG: bars for counts per interval
//! (the forecast) and a line over time (the last hour of expiry). Every
//! bar and point carries its value in a `data-value` attribute and a
//! `<title>` tooltip, so what a chart shows can be read back exactly.

use std::fmt::Write;

use super::html::{esc, num};

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 140.0;
/// Room on the left for the scale and below for the axis labels.
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 18.0;

/// One bar: its tooltip and its count.
pub struct Bar {
    pub label: String,
    pub value: u64,
}

fn frame(id: &str, caption: &str, top: &str, inner: &str, ends: (&str, &str)) -> String {
    let plot_h = HEIGHT - BOTTOM;
    format!(
        "<figure><figcaption>{caption}</figcaption>\
         <svg id=\"{id}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">\
         <text x=\"0\" y=\"10\">{top}</text><text x=\"0\" y=\"{plot_h}\">0</text>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{plot_h}\" x2=\"{w}\" y2=\"{plot_h}\"/>\
         {inner}\
         <text x=\"{LEFT}\" y=\"{h}\">{}</text>\
         <text x=\"{w}\" y=\"{h}\" text-anchor=\"end\">{}</text></svg></figure>",
        esc(ends.0),
        esc(ends.1),
        caption = esc(caption),
        top = esc(top),
        w = WIDTH,
        h = HEIGHT,
    )
}

/// A bar chart of `bars`, left to right; `ends` labels the axis's ends.
pub fn bars(id: &str, caption: &str, bars: &[Bar], ends: (&str, &str)) -> String {
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0).max(1);
    let plot_h = HEIGHT - BOTTOM - 12.0;
    let step = (WIDTH - LEFT) / bars.len().max(1) as f64;
    let mut inner = String::new();
    for (i, bar) in bars.iter().enumerate() {
        let h = if bar.value == 0 {
            0.0
        } else {
            (bar.value as f64 / max as f64 * plot_h).max(1.0)
        };
        let _ = write!(
            inner,
            "<rect class=\"bar\" data-value=\"{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\">\
             <title>{}: {}</title></rect>",
            bar.value,
            LEFT + i as f64 * step,
            HEIGHT - BOTTOM - h,
            (step - 1.0).max(0.5),
            esc(&bar.label),
            num(bar.value),
        );
    }
    frame(id, caption, &num(max), &inner, ends)
}

/// A line of `points` (time in millis, value; None where nothing was
/// measured) over `[from, to]`; `unit` follows values in tooltips.
pub fn line(
    id: &str,
    caption: &str,
    points: &[(i64, Option<f64>)],
    span: (i64, i64),
    unit: &str,
    ends: (&str, &str),
) -> String {
    let max = points
        .iter()
        .filter_map(|p| p.1)
        .fold(0.0f64, f64::max)
        .max(1.0);
    let plot_h = HEIGHT - BOTTOM - 12.0;
    let x = |t: i64| {
        let len = (span.1 - span.0).max(1) as f64;
        LEFT + ((t - span.0) as f64 / len).clamp(0.0, 1.0) * (WIDTH - LEFT)
    };
    let y = |v: f64| HEIGHT - BOTTOM - v / max * plot_h;
    let mut path = String::new();
    let mut dots = String::new();
    for (at, value) in points {
        let Some(v) = value else {
            continue;
        };
        let _ = write!(path, "{:.1},{:.1} ", x(*at), y(*v));
        let _ = write!(
            dots,
            "<circle class=\"point\" data-value=\"{v}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.5\">\
             <title>{}: {} {unit}</title></circle>",
            x(*at),
            y(*v),
            super::html::time(*at),
            trim(*v),
        );
    }
    let inner = format!("<polyline class=\"line\" points=\"{path}\"/>{dots}");
    frame(id, caption, &trim(max), &inner, ends)
}

/// `v` without a fractional part when it has none worth showing.
fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bar_and_point_carries_its_value() {
        let svg = bars(
            "f",
            "next hour",
            &[
                Bar {
                    label: "a".into(),
                    value: 3,
                },
                Bar {
                    label: "b".into(),
                    value: 0,
                },
            ],
            ("now", "+1 h"),
        );
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("data-value=\"3\""));
        assert!(svg.contains("data-value=\"0\""));
        let svg = line(
            "l",
            "lag",
            &[(0, Some(2.0)), (10, None), (20, Some(4.5))],
            (0, 20),
            "ms",
            ("-1 h", "now"),
        );
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("data-value=\"4.5\""));
    }
}
