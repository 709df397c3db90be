//! Offered load against capacity over time, one panel per stack, as SVG
//! (plotters' SVG backend and line series only: no font or system
//! libraries; text is left to the SVG viewer).

use plotters::prelude::*;

use crate::StackReport;

/// Draws `reports` into an SVG document and returns it.
pub fn render(reports: &[StackReport]) -> Result<String, String> {
    let mut out = String::new();
    {
        let height = 220 * reports.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut out, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((reports.len().max(1), 1));
        let end = reports
            .iter()
            .flat_map(|r| r.series.last().map(|s| s.0 + 1.0))
            .fold(1.0, f64::max);
        let top = reports
            .iter()
            .flat_map(|r| r.series.iter().map(|s| s.1.max(s.2)))
            .fold(1.0, f64::max)
            * 1.1;
        for (report, panel) in reports.iter().zip(panels.iter()) {
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{}: upstream calls/s (red) vs capacity (black), goodput (blue)",
                        report.stack.as_str()
                    ),
                    ("sans-serif", 16),
                )
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..end, 0.0..top)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_desc("virtual seconds")
                .y_desc("per second")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .max_light_lines(0)
                .draw()
                .map_err(|e| e.to_string())?;
            let line = |pick: fn(&(f64, f64, f64, f64)) -> f64| {
                report
                    .series
                    .iter()
                    .map(move |s| (s.0, pick(s)))
                    .collect::<Vec<_>>()
            };
            chart
                .draw_series(LineSeries::new(line(|s| s.2), BLACK.stroke_width(2)))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(line(|s| s.3), BLUE.stroke_width(1)))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(line(|s| s.1), RED.stroke_width(1)))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}
