#pragma once
// The course documents' own figures beside today's: `rooflab report --course` runs, for each
// timed figure of the documents that a rung reproduces on the document's axes (element type,
// size, threads), that rung, and writes the document's time, today's and their ratio.
#include <string>
#include <vector>

#include "bench/registry.hpp"

namespace rooflab::bench {

// One timed figure of a course document and the run that reproduces it.
struct CourseFigure {
  std::string item;                  // its row in docs/course.md (M5, H3, U4, L9, P12, ...)
  std::string document;              // the glossary's name of the document
  std::string place;                 // where the document gives it: line, section or timestamp
  std::string what;                  // the experiment, in a few words
  std::string op;                    // the rooflab op that reproduces it
  std::vector<std::string> options;  // its bench options, as on the command line
  std::string rung;                  // the rung whose median is compared
  double document_ms = 0;            // the document's figure, in milliseconds
  std::string document_device;       // the GPU (or CPU) the document measured on
};

// Every figure, in the order of docs/course.md.
const std::vector<CourseFigure>& course_figures();

// Today's time for a figure: its rung's median, or why there is none (skipped, failed).
struct CourseMeasurement {
  bool measured = false;
  double ms = 0;
  std::string why;
};

// The report's page: a table per document, each figure's place, experiment, the document's time
// and device, today's time on `device`, and the document's time over today's (how many times
// faster today is).
std::string course_markdown(const std::vector<CourseFigure>& figures,
                            const std::vector<CourseMeasurement>& today, const std::string& device);

}  // namespace rooflab::bench
