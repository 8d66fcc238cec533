#include "costmodel/power/power.h"

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

TEST(PowerTest, WattsByHand) {
  // H100: idle 70 W, TDP 700 W. Compute 80% of the step, exposed
  // communication and pipeline waits 20%: 0.85*0.8 + 0.75*0.2 = 0.83 of the
  // 630 W range: 70 + 522.9 = 592.9 W.
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const Calibration c;
  EXPECT_NEAR(WattsPerGpu(h100, 0.8, 0.2, 0, c), 592.9, 1e-9);
  // Waiting on NCCL draws nearly what computing does (the seed study's flat
  // power per GPU): a step that is half exposed communication still draws
  // 70 + (0.85*0.5 + 0.75*0.5) * 630 = 574 W.
  EXPECT_NEAR(WattsPerGpu(h100, 0.5, 0.5, 0, c), 574, 1e-9);
  EXPECT_EQ(WattsPerGpu(h100, 0, 0, 0, c), 70);
  // Never above TDP.
  EXPECT_EQ(WattsPerGpu(h100, 1, 1, 1, c), 700);
  EXPECT_EQ(WattsPerGpu(h100, 3, 2, 2, c), 700);
  // More compute, more watts.
  EXPECT_GT(WattsPerGpu(h100, 0.9, 0.1, 0, c),
            WattsPerGpu(h100, 0.5, 0.1, 0, c));
}

TEST(PowerTest, EachPhaseDrawsItsOwnShare) {
  // Compute 60%, exposed communication 25%, pipeline waits 15% of the step,
  // with shares 0.9, 0.5 and 0.2: 0.54 + 0.125 + 0.03 = 0.695 of the 630 W
  // range: 70 + 437.85 = 507.85 W.
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  Calibration c;
  c.power_compute_activity = 0.9;
  c.power_comm_activity = 0.5;
  c.power_pipeline_wait_activity = 0.2;
  EXPECT_NEAR(WattsPerGpu(h100, 0.6, 0.25, 0.15, c), 507.85, 1e-9);
  // A bubble draws its own share, not the communication's.
  EXPECT_LT(WattsPerGpu(h100, 0.6, 0.25, 0.15, c),
            WattsPerGpu(h100, 0.6, 0.4, 0, c));
  // The defaults: waits draw what exposed communication draws.
  const Calibration d;
  EXPECT_EQ(d.power_pipeline_wait_activity, d.power_comm_activity);
  EXPECT_NEAR(WattsPerGpu(h100, 0.6, 0.25, 0.15, d),
              WattsPerGpu(h100, 0.6, 0.4, 0, d), 1e-9);
}

TEST(PowerTest, EnergyByHand) {
  // 4e6 tokens per 10 s step on 1000 GPUs at 600 W: 4e6 / 6e6 J.
  EXPECT_NEAR(TokensPerJoule(4e6, 600, 10, 1000), 4.0 / 6, 1e-12);
  // 1e12 tokens at 1e6 tokens/s = 1e6 s: 11.574 days, 277,777.8 GPU-hours
  // on 1000 GPUs, 600 W * 1000 * 1e6 s = 6e11 J = 166.67 MWh.
  const FullRunPrediction r = PredictFullRun(1e12, 1e6, 600, 1000);
  EXPECT_NEAR(r.days, 1e6 / 86400, 1e-9);
  EXPECT_NEAR(r.gpu_hours, 1e6 / 3600 * 1000, 1e-6);
  EXPECT_NEAR(r.energy_mwh, 6e11 / 3.6e9, 1e-9);
}

}  // namespace
}  // namespace tessera::costmodel
