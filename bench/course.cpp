#include "bench/course.hpp"

#include <fmt/format.h>

#include "bench/format.hpp"

namespace rooflab::bench {

std::string course_markdown(const std::vector<CourseFigure>& figures,
                            const std::vector<CourseMeasurement>& today,
                            const std::string& device) {
  std::string page = fmt::format(
      "# The course documents' figures, today\n\n"
      "Each timed figure of the course documents that a rung reproduces on the document's axes, "
      "beside that rung, run on {} (docs/course.md has every item, timed or not). \"Document / "
      "today\" above 1 means today's GPU is that many times faster.\n",
      device);
  std::string document;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const CourseFigure& figure = figures[i];
    if (figure.document != document) {
      document = figure.document;
      page += fmt::format(
          "\n## {}\n\n| item | place | experiment | rooflab run | document | today | document / "
          "today |\n|---|---|---|---|---:|---:|---:|\n",
          document);
    }
    std::string run = figure.op;
    for (const std::string& option : figure.options) run += " " + option;
    run += " (" + figure.rung + ")";
    const CourseMeasurement& measurement = i < today.size() ? today[i] : CourseMeasurement{};
    const std::string now = measurement.measured      ? human_time(measurement.ms)
                            : measurement.why.empty() ? "not run"
                                                      : measurement.why;
    const std::string ratio = measurement.measured && measurement.ms > 0
                                  ? fmt::format("{:.2f}x", figure.document_ms / measurement.ms)
                                  : "-";
    page += fmt::format("| {} | {} | {} | `{}` | {} ({}) | {} | {} |\n", figure.item, figure.place,
                        figure.what, run, fmt::format("{:g} ms", figure.document_ms),
                        figure.document_device, now, ratio);
  }
  return page;
}

}  // namespace rooflab::bench
