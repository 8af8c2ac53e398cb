#include <boost/test/unit_test.hpp>

#include <array>
#include <cstring>
#include <vector>

#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"
#include "transport/batch_check.hpp"
#include "worker/batch_maker.hpp"

using namespace stoker;

namespace {

work_item item_of(std::vector<uint64_t> ids) {
  work_item item;
  item.epoch = 2;
  item.batch_id = 5;
  item.sample_ids = std::move(ids);
  return item;
}

pipeline_options fused_pipeline(uint32_t h, uint32_t w, uint32_t c) {
  pipeline_options p;
  p.kind = pipeline_kind::fused_blur;
  p.synthetic.seed = p.blur.seed = 31;
  p.synthetic.height = p.data.output.height = h;
  p.synthetic.width = p.data.output.width = w;
  p.synthetic.channels = p.data.output.channels = c;
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_maker)

BOOST_AUTO_TEST_CASE(the_fused_stage_makes_the_bits_of_mapper_then_blur) {
  // Made in planes and checksummed on the copy, or made HWC, blurred and
  // stamped step by step: the same batch, whichever ISA the chain runs.
  registry reg;
  for (auto isa : {cpu_isa::avx512, cpu_isa::avx2, cpu_isa::scalar}) {
    if (!cpu_supports(isa))
      continue;
    for (auto [h, w, c] : {std::array<uint32_t, 3>{37, 53, 3},
                           std::array<uint32_t, 3>{17, 16, 1},
                           std::array<uint32_t, 3>{33, 40, 4}}) {
      auto p = fused_pipeline(h, w, c);
      p.blur.impl = blur_impl::stoker;
      p.blur.isa = isa;
      auto maker = stoker::batch_maker::open(p, reg);
      BOOST_REQUIRE(static_cast<bool>(maker));
      auto item = item_of({3, 9, 1024});
      batch_resources own;
      auto fused = maker->make(item, 1.0, own);
      auto stepwise = map_synthetic(p.synthetic, item);
      apply_blur_stage(p.blur, stepwise);
      stepwise.checksums.clear();
      stamp_checksums(stepwise);
      BOOST_TEST((fused.order == layout::chw));
      BOOST_TEST(fused.labels == stepwise.labels);
      BOOST_TEST(fused.checksums == stepwise.checksums);
      BOOST_REQUIRE_EQUAL(fused.data.size(), stepwise.data.size());
      BOOST_TEST(std::memcmp(fused.data.data(), stepwise.data.data(),
                             fused.data.size())
                   == 0,
                 to_string(isa) << " " << h << "x" << w << "x" << c);
      batch_expectation expect;
      expect.height = h;
      expect.width = w;
      expect.channels = c;
      expect.num_classes = p.synthetic.num_classes;
      auto refused = check_batch(fused, expect);
      BOOST_TEST(!refused, "the trainer's check refuses it");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
