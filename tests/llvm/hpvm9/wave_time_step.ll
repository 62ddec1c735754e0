; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text): typed
; pointers, bare in/out attributes, empty packed %struct.out.* returns, node functions passed
; to createNode through bitcast constant expressions, TBAA on the float accesses, hints as
; named metadata and a main that launches the root.
;
; One leapfrog step of the 1-D wave equation, as a time-stepping host runs it: a 1-D leaf over
; the n points of the string; point 0 is driven by the time t the host passes each step
; (next[0] = t / 2), point n-1 is held (next[n-1] = 0), an inner point i becomes
; (2 cur[i] - prev[i]) + c2 ((cur[i-1] + cur[i+1]) - 2 cur[i]). Straight-line code: the host's
; t and c2 change no work, n sizes the node.
; ModuleID = 'wave.c'
source_filename = "wave.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, float*, i64, float, float, i64, %struct.out.WaveRoot }
%struct.out.wave = type <{}>
%struct.out.WaveRoot = type <{}>

; Function Attrs: nounwind uwtable
define dso_local %struct.out.wave @wave_cloned(float* in %prev, i64 %bytes_prev, float* in %cur, i64 %bytes_cur, float* out %next, i64 %bytes_next, float %c2, float %t, i64 %n) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %first = icmp eq i64 %i, 0
  br i1 %first, label %drive, label %if.inner

drive:                                            ; preds = %entry
  %source = fmul float %t, 5.000000e-01
  store float %source, float* %next, align 4, !tbaa !5
  br label %exit

if.inner:                                         ; preds = %entry
  %last = add nsw i64 %n, -1
  %inner = icmp slt i64 %i, %last
  br i1 %inner, label %step, label %hold

hold:                                             ; preds = %if.inner
  %ph = getelementptr inbounds float, float* %next, i64 %i
  store float 0.000000e+00, float* %ph, align 4, !tbaa !5
  br label %exit

step:                                             ; preds = %if.inner
  %im1 = add nsw i64 %i, -1
  %ip1 = add nuw nsw i64 %i, 1
  %pl = getelementptr inbounds float, float* %cur, i64 %im1
  %l = load float, float* %pl, align 4, !tbaa !5
  %pc = getelementptr inbounds float, float* %cur, i64 %i
  %c = load float, float* %pc, align 4, !tbaa !5
  %pr = getelementptr inbounds float, float* %cur, i64 %ip1
  %r = load float, float* %pr, align 4, !tbaa !5
  %pp = getelementptr inbounds float, float* %prev, i64 %i
  %p = load float, float* %pp, align 4, !tbaa !5
  %twoc = fmul float %c, 2.000000e+00
  %sides = fadd float %l, %r
  %lap = fsub float %sides, %twoc
  %inertia = fsub float %twoc, %p
  %pull = fmul float %c2, %lap
  %v = fadd float %inertia, %pull
  %pn = getelementptr inbounds float, float* %next, i64 %i
  store float %v, float* %pn, align 4, !tbaa !5
  br label %exit

exit:                                             ; preds = %step, %hold, %drive
  ret %struct.out.wave undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.WaveRoot @WaveRoot_cloned(float* in %prev, i64 %bytes_prev, float* in %cur, i64 %bytes_cur, float* out %next, i64 %bytes_next, float %c2, float %t, i64 %n) #0 {
entry:
  %wave_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.wave (float*, i64, float*, i64, float*, i64, float, float, i64)* @wave_cloned to i8*), i64 %n)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 7, i32 7, i1 false)
  call void @llvm.hpvm.bind.input(i8* %wave_cloned.node, i32 8, i32 8, i1 false)
  ret %struct.out.WaveRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.WaveRoot (float*, i64, float*, i64, float*, i64, float, float, i64)* @WaveRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode1D(i8*, i64) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.wave (float*, i64, float*, i64, float*, i64, float, float, i64)* @wave_cloned}
!3 = !{%struct.out.WaveRoot (float*, i64, float*, i64, float*, i64, float, float, i64)* @WaveRoot_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
